"""The game record (.rrec): every hash survives the trip through JSON, and a malformed file is
refused with the line named."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from shared.audit.record import (
    RecordError,
    build_record,
    dumps,
    event_line,
    loads,
    parse_record,
)
from shared.audit.verify import audit_record
from shared.infra.chain import chain, compute_hash, verify_chain
from shared.infra.codec import Upcasters
from shared.infra.stored import GENESIS_HASH, NewEvent, StoredEvent
from tests.audit.games import Game


def test_a_record_round_trips_every_hash(games: list[Game]) -> None:
    for game in games:
        record = build_record(game.events, exported=1_700_000_000.5)
        back = loads(dumps(record))
        assert back.header == record.header
        assert back.head == (game.events[-1].version, game.events[-1].hash)
        assert list(back.events) == [e.stored_form() for e in game.events]
        assert verify_chain(back.events, game_id=game.game_id) is None


def test_the_header_says_what_the_events_say(game: Game) -> None:
    record = build_record(game.events, exported=12.0)
    lines = dumps(record).splitlines()
    header = json.loads(lines[0])
    assert list(header)[:2] == ["format", "version"]
    assert header["format"] == "rrec" and header["version"] == 1
    assert header["game_id"] == game.game_id
    assert header["rules"] == "robbers" and header["options"] == {"match_rounds": 2}
    assert header["players"] == list(game.report.state.names)
    assert header["commitment"] == game.report.state.commitment
    assert header["seed"] == game.seed.hex()
    assert json.loads(lines[-1]) == {
        "head": {"version": len(game.events), "hash": game.events[-1].hash}
    }
    assert len(lines) == len(game.events) + 2
    assert set(json.loads(lines[1])) == {
        "version",
        "type",
        "schema",
        "time",
        "command_id",
        "actor",
        "data",
        "prev_hash",
        "hash",
    }


def test_ints_stay_ints_and_floats_keep_every_bit() -> None:
    data = {"n": 1, "f": 1.0, "third": 0.1 + 0.2, "big": 2**63, "neg": -(2**62), "t": [1, 2.5]}
    events = chain("g-floats", [NewEvent("GameCreated", data)], 1, GENESIS_HASH, "c", 1.5e9 + 0.1)
    back = loads(dumps(build_record(events, exported=0.0)))
    (event,) = back.events
    assert event.hash == events[0].hash == compute_hash(event.hashed_fields())
    assert type(event.data["n"]) is int and type(event.data["f"]) is float
    assert event.data["third"] == 0.1 + 0.2 and event.time == 1.5e9 + 0.1


def test_a_value_json_cannot_carry_is_refused_naming_the_event() -> None:
    events = chain(
        "g-bytes", [NewEvent("GameCreated", {"b": b"\x00\x01"})], 1, GENESIS_HASH, None, 1.0
    )
    with pytest.raises(RecordError, match=r"event 1 \(GameCreated\)"):
        build_record(events)
    nan = chain("g-nan", [NewEvent("GameCreated", {"x": float("nan")})], 1, GENESIS_HASH, None, 1.0)
    with pytest.raises(RecordError, match="event 1"):
        build_record(nan)


def test_an_upcast_event_is_recorded_as_stored(game: Game) -> None:
    upcasters = Upcasters()
    upcasters.register("TurnStarted", 1, lambda data: {**data, "extra": True})
    upcast = [upcasters.upcast(e) for e in game.events]
    assert any(e.as_stored is not None for e in upcast)
    record = build_record(upcast, exported=0.0)
    assert dumps(record) == dumps(build_record(game.events, exported=0.0))
    started = next(e for e in upcast if e.type == "TurnStarted")
    assert "extra" not in event_line(started)["data"] and event_line(started)["schema"] == 1


def _lines(game: Game) -> list[str]:
    return dumps(build_record(game.events, exported=0.0)).splitlines()


@pytest.mark.parametrize(
    ("edit", "line", "words"),
    [
        (lambda ls: ls.__setitem__(2, ls[2][:-1]), 3, "not JSON"),
        (lambda ls: ls.__setitem__(0, '{"format": "zip"}'), 1, "not a game record"),
        (lambda ls: ls.__setitem__(0, ls[0].replace('"version":1', '"version":2')), 1, "version 2"),
        (lambda ls: ls.__setitem__(3, ls[3].replace('"actor"', '"who"')), 4, "lacks actor"),
        (lambda ls: ls.__setitem__(4, ls[4][:-1] + ',"x":1}'), 5, "unknown fields x"),
        (lambda ls: ls.__setitem__(5, ls[5].replace('"version":5', '"version":"5"')), 6, "version"),
        (lambda ls: ls.__setitem__(2, "[1, 2]"), 3, "JSON object"),
        (lambda ls: ls.append('{"version": 1}'), None, "nothing may follow the head"),
        (lambda ls: ls.pop(), None, "without its head line"),
        (lambda ls: ls.__setitem__(len(ls) - 1, '{"head": {"version": "x"}}'), None, "head line"),
    ],
)
def test_a_malformed_record_names_its_line(
    game: Game, edit: object, line: int | None, words: str
) -> None:
    lines = _lines(game)
    edit(lines)  # type: ignore[operator]
    expected = line if line is not None else len(lines)
    with pytest.raises(RecordError, match=words) as caught:
        parse_record(lines)
    assert caught.value.line in (expected, expected + 1)
    assert str(caught.value).startswith(f"line {caught.value.line}:")


def test_blank_lines_and_a_final_newline_are_fine(game: Game) -> None:
    lines = _lines(game)
    lines.insert(3, "   ")
    record = parse_record([*lines, ""])
    assert len(record.events) == len(game.events)


def test_an_empty_or_eventless_record_is_refused(game: Game) -> None:
    lines = _lines(game)
    with pytest.raises(RecordError, match="empty"):
        parse_record([])
    with pytest.raises(RecordError, match="no events"):
        parse_record([lines[0], lines[-1]])
    with pytest.raises(RecordError, match="GameCreated"):
        build_record([replace(game.events[1], version=1)])


def _salted(game: Game) -> list[StoredEvent]:
    """The game's log as the referee writes it now: every event salted by the seed."""
    out: list[StoredEvent] = []
    prev = GENESIS_HASH
    for e in game.events:
        new = NewEvent(e.type, e.data, e.schema, e.actor)
        out += chain(e.game_id, [new], e.version, prev, e.command_id, e.time, game.seed)
        prev = out[-1].hash
    return out


@pytest.mark.parametrize("salted", [False, True])
def test_the_documented_check_by_hand_works(tmp_path: Path, game: Game, salted: bool) -> None:
    """docs/record-format.md shows how to recompute every hash with json, hashlib and msgpack
    only: run that snippet on a record, salted or not (and on a tampered one, where it must
    fail)."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "record-format.md").read_text()
    snippet = doc.split("```python\n", 1)[1].split("```", 1)[0]
    good = tmp_path / "game.rrec"
    events = _salted(game) if salted else game.events
    assert all((e.salt is not None) == salted for e in events)
    good.write_text(dumps(build_record(events, exported=0.0)))
    if salted:
        assert '"salt":"' in good.read_text()
        assert audit_record(loads(good.read_text())).ok
    exec(snippet.replace('"game.rrec"', repr(str(good))), {})
    lines = good.read_text().splitlines()
    lines[9] = lines[9].replace('"actor":"', '"actor":"x', 1)
    good.write_text("\n".join(lines))
    with pytest.raises(AssertionError):
        exec(snippet.replace('"game.rrec"', repr(str(good))), {})


def test_salts_not_made_from_the_revealed_seed_fail_the_seed_check(game: Game) -> None:
    """Once the seed is out, anyone can check every salt: one made otherwise (with the chain
    recomputed around it, so only this check can catch it) fails ``seed`` at its version."""
    salted = _salted(game)
    audit = audit_record(build_record(salted, exported=0.0))
    assert audit.ok and "salt(s) made from it" in audit.verdict("seed").message
    assert f"{len(salted)} event salt(s)" in audit.verdict("seed").message
    other = b"\x01" * 32
    forged: list[StoredEvent] = []
    prev = GENESIS_HASH
    for e in salted:
        key = other if e.version == 5 else game.seed
        new = NewEvent(e.type, e.data, e.schema, e.actor)
        forged += chain(e.game_id, [new], e.version, prev, e.command_id, e.time, key)
        prev = forged[-1].hash
    verdict = audit_record(build_record(forged, exported=0.0)).verdict("seed")
    assert verdict.status == "failed" and verdict.version == 5, verdict
    assert "salt of version 5" in verdict.message
