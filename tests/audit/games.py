"""Self-played games as real stored logs: ``SelfPlay`` decides and folds every command, and each
command's events are chained into a log exactly as the store's append does (one append per
command: its events share the command id and the time the decision was taken at)."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any

from shared.core.events import Event
from shared.infra.chain import chain
from shared.infra.gamelog import to_new
from shared.infra.stored import GENESIS_HASH, NewEvent, StoredEvent
from shared.play.bots import BOTS
from shared.play.selfplay import GameReport, SelfPlay

SEATS3 = ("clumsy", "greedy", "random")
GREEDY3 = ("greedy", "greedy", "greedy")
# (rules, options, bots, timeout rate, luck): every rule set, timeouts, tie-breaks, the pile variant
# with reshuffles, place-draw-place turns ended by "end", failed-turn penalty draws.
CONFIGS: list[tuple[str, dict[str, Any], tuple[str, ...], float, int]] = [
    ("robbers", {"match_rounds": 2}, SEATS3, 0.0, 0),
    ("robbers-classic", {}, SEATS3, 0.0, 10),
    ("rummikub", {}, ("clumsy", "random"), 0.05, 20),
    ("robbers", {"discard_pile": True, "match_rounds": 2}, SEATS3, 0.0, 30),
    (
        "robbers",
        {"match": "first_out", "match_target": 1, "redeem_bonus": 5},
        ("greedy", "clumsy"),
        0.0,
        49,
    ),
    ("rummikub", {"turn_seconds": 30, "failed_turn_draw": 2}, SEATS3, 0.05, 50),
    ("robbers-classic", {"discard_pile": True}, ("clumsy", "random"), 0.0, 60),
    (
        "robbers",
        {"discard_pile": True, "match": "single", "hand_size": 30, "opening_points": 0},
        GREEDY3,
        0.0,
        4,
    ),
]


@dataclass
class Game:
    """A played game: its stored log, the self-play report and the secret seed."""

    game_id: str
    events: list[StoredEvent]
    report: GameReport
    seed: bytes


def _actor(event: Event) -> str:
    seat = getattr(event, "seat", None)
    if isinstance(seat, int) and event.TYPE not in ("PlayerSeated",):
        return f"seat:{seat}"
    return "service"


def play_game(
    number: int,
    rules: str = "robbers",
    options: dict[str, Any] | None = None,
    bots: tuple[str, ...] = ("clumsy", "greedy", "random"),
    timeout_rate: float = 0.0,
    luck: int | None = None,
) -> Game:
    """Play game ``audit-<number>`` between ``bots`` (shuffled and played by ``luck``, default
    ``number``) and return its stored log."""
    game_id = f"audit-{number}"
    luck = number if luck is None else luck
    seed = random.Random(luck).randbytes(32)
    batches: list[tuple[float, list[Event]]] = []
    player = SelfPlay(
        rules,
        dict(options or {}),
        [BOTS[name]() for name in bots],
        seed,
        random.Random(luck),
        timeout_rate=timeout_rate,
        check=False,
    )
    player.create = replace(player.create, game_id=game_id)

    def collect(event: Event) -> None:
        if batches and batches[-1][0] == player.now:
            batches[-1][1].append(event)
        else:
            batches.append((player.now, [event]))

    player.on_event = collect
    report = player.play()
    stored: list[StoredEvent] = []
    head = GENESIS_HASH
    for index, (now, events) in enumerate(batches):
        new = [to_new(e, _actor(e)) for e in events]
        stored += chain(game_id, new, len(stored) + 1, head, f"c{index}", now)
        head = stored[-1].hash
    return Game(game_id, stored, report, seed)


def rechain(events: list[StoredEvent], start: int = 0) -> list[StoredEvent]:
    """The log with every event from index ``start`` re-hashed and re-linked (what an operator
    rewriting the log would do to keep the chain consistent)."""
    out = list(events[:start])
    head = out[-1].hash if out else GENESIS_HASH
    for event in events[start:]:
        new = NewEvent(event.type, event.data, event.schema, event.actor)
        (again,) = chain(event.game_id, [new], len(out) + 1, head, event.command_id, event.time)
        out.append(again)
        head = again.hash
    return out


def with_data(event: StoredEvent, **changes: Any) -> StoredEvent:
    """``event`` with some fields of its data changed (hash left as it was)."""
    return replace(event, data={**event.data, **changes})
