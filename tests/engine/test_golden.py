"""Golden games (``tests/golden/*.json``, written by ``tests/golden/make_golden.py``), like perft
and PGN files for chess engines: (a) folding a file's events reproduces its expected final table
and hands exactly; (b) deciding its commands again from scratch, with its seed and times,
reproduces exactly its events, so any change to ``decide``'s behaviour shows up here as a
golden diff."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from shared.core import decide as decide_module
from shared.core import shuffle as shuffle_module
from shared.core.codes import Rejection
from shared.core.commands import Context, CreateGame, command_json
from shared.core.decide import decide
from shared.core.events import Event, GameCreated, SeedRevealed, event_from, to_data
from shared.core.evolve import evolve, fold
from shared.core.shuffle import shuffled
from shared.core.state import GameState

from .helpers import command_from_json, hand_text, table_text

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
FILES = sorted(GOLDEN.glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    """One golden file."""
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def events_of(record: dict[str, Any]) -> list[Event]:
    """The file's events, rebuilt from their stored form."""
    return [event_from(e["type"], e["data"]) for e in record["events"]]


def plain(event: Event) -> dict[str, Any]:
    """An event in the stored form, through JSON (so tuples and lists compare alike)."""
    stored: dict[str, Any] = json.loads(json.dumps({"type": event.TYPE, "data": to_data(event)}))
    return stored


def test_golden_files_cover_every_preset() -> None:
    """At least two golden games per preset, each with its commands, events and final state."""
    presets = [load(path)["rules"] for path in FILES]
    for preset in ("robbers", "robbers-classic", "rummikub"):
        assert presets.count(preset) >= 2, preset
    for path in FILES:
        record = load(path)
        assert record["name"] == path.stem
        assert record["commands"] and record["events"]
        assert {"table", "hands", "status", "round", "winners"} <= set(record["final"])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_fold_reproduces_the_final_table_and_hands(path: Path) -> None:
    """(a) The fold of the stored events ends on exactly the expected table and hands (card
    notation), status, round and winners; every stored event survives its own encoding."""
    record = load(path)
    events = events_of(record)
    for stored, event in zip(record["events"], events, strict=True):
        assert plain(event) == stored
    state = fold(events)
    final = record["final"]
    assert table_text(state.table) == final["table"]
    assert [hand_text(h) for h in state.hands] == final["hands"]
    assert state.status == final["status"]
    assert state.round == final["round"]
    assert list(state.winners) == final["winners"]


def first_difference(record: dict[str, Any]) -> str | None:
    """Decide the record's commands again from an empty game, each with the record's seed at
    its stored time, and describe the first way the outcome differs from the stored events
    (a refusal, a different event, too many or too few), or None when they agree exactly."""
    seed = bytes.fromhex(record["seed"])
    expected = record["events"]
    state = GameState()
    position = 0
    for step, entry in enumerate(record["commands"]):
        command = command_from_json(entry["command"])
        if command_json(command) != entry["command"]:
            return f"command {step} does not survive its JSON form"
        answer = decide(state, command, Context(entry["now"], seed))
        if isinstance(answer, Rejection):
            return f"command {step} {entry['command']} refused: {answer}"
        for event in answer:
            if position >= len(expected):
                return f"command {step} yields more events than stored"
            if plain(event) != expected[position]:
                return (
                    f"event {position} (from command {step}: {entry['command']}): decided "
                    f"{plain(event)}, stored {expected[position]}"
                )
            state = evolve(state, event)
            position += 1
    if position != len(expected):
        return f"the stored events go on beyond the commands ({position} of {len(expected)})"
    if state != fold(events_of(record)):
        return "the decided state differs from the fold of the stored events"
    return None


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_deciding_the_commands_again_reproduces_the_events(path: Path) -> None:
    """(b) From an empty game, each stored command decided with the file's seed at its stored
    time is accepted and yields exactly the next stored events; together they are all of them.
    The first difference is described, so a change to ``decide`` reads as a golden diff."""
    assert first_difference(load(path)) is None


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_golden_seed_matches_its_commitment(path: Path) -> None:
    """Each golden game commits to its seed at creation and reveals exactly it at the end."""
    record = load(path)
    events = events_of(record)
    created, revealed = events[0], events[-1]
    assert isinstance(created, GameCreated) and isinstance(revealed, SeedRevealed)
    assert created.commitment == hashlib.sha256(bytes.fromhex(record["seed"])).hexdigest()
    assert revealed.seed == record["seed"]
    assert list(fold(events).seeds) == record["player_seeds"]
    first = command_from_json(record["commands"][0]["command"])
    assert isinstance(first, CreateGame)
    assert (first.rules, first.options, first.seats) == (
        record["rules"],
        record["options"],
        record["seats"],
    )


def test_a_changed_decision_shows_as_a_golden_diff(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay really compares: a deal from another shuffle, a failed-turn draw of another
    size, or one altered stored event, each make it report a difference."""
    record = load(GOLDEN / "robbers-timer.json")
    assert first_difference(record) is None
    altered = json.loads(json.dumps(record))
    assert altered["events"][-2]["type"] == "MatchEnded"
    altered["events"][-2]["data"]["winners"] = [9]
    assert first_difference(altered) is not None
    with monkeypatch.context() as patch:
        patch.setattr(shuffle_module, "shuffled", other_shuffle(shuffled))
        found = first_difference(record)
        assert found is not None and "StarterChosen" in found
    strict = json.loads(json.dumps(record))
    assert any(e["type"] == "CardDrawn" and e["data"]["penalty"] for e in strict["events"])
    with monkeypatch.context() as patch:
        patch.setattr(decide_module, "_draw_cards", draw_one_more(decide_module._draw_cards))
        found = first_difference(record)
        assert found is not None and "CardDrawn" in found


def other_shuffle(original: Any) -> Any:
    """A ``shuffled`` that draws from another stream (a changed shuffle)."""

    def changed(items: Any, key: bytes, purpose: str) -> Any:
        return original(items, key, purpose + "/changed")

    return changed


def draw_one_more(original: Any) -> Any:
    """A ``_draw_cards`` that draws one card more than asked (a changed rule)."""

    def changed(state: GameState, seat: int, count: int, penalty: bool, ctx: Context) -> Any:
        return original(state, seat, count + 1, penalty, ctx)

    return changed
