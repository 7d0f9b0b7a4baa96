"""The gateway's costly answers, as jobs for its worker processes (``shared.infra.workpool``):
the solver's hint for a seat, the replay of a turn (and its picture), the record of a game.

Each is a plain function of picklable values that returns an :class:`Answer` (the body as text,
or a refusal), so a worker can run it and the event loop only sends the text on. The logs come
as the store's raw records: decoding them is part of the work, done in the worker too. This
module imports no aiohttp: a worker loads only what the work needs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shared.core.cards import cards_str, sorted_cards
from shared.core.events import Melds
from shared.core.rulesets import RuleSet
from shared.infra import codec
from shared.infra.stored import StoredEvent
from shared.solver import Goal


@dataclass(frozen=True)
class Answer:
    """A computed answer: ``text`` is the body of a 200, or the message of a refusal whose
    error ``code`` is set (with its HTTP ``status``)."""

    text: str
    status: int = 200
    code: str = ""


def prepare() -> None:
    """A worker's set-up before its first job: the modules every job needs, and the cyclic
    collector at the networked commands' thresholds (as the solver's figures were measured)."""
    import shared.audit.record
    import shared.audit.replay
    import shared.pictures.turn
    from shared.infra.runtime import configure_solver, quiet_gc

    configure_solver()  # RUMMY_SOLVER and RUMMY_SOLVER_BUILD, from the inherited environment
    import shared.solver.goals  # noqa: F401 - loaded here, not in a job's budget

    quiet_gc()


def hint(
    rules: RuleSet,
    table: Melds,
    hand: Sequence[int],
    opened: bool,
    goal: Goal,
    min_disruption: bool,
    about: dict[str, Any],
) -> Answer:
    """The solver's play for a seat (its own view only), after ``about`` (seat, version...)."""
    from shared.solver import solve

    started = time.perf_counter()
    play = solve(rules, table, hand, opened, goal, min_disruption)
    body = about | {
        "found": play.found,
        "layout": [cards_str(m) for m in play.layout],
        "played": cards_str(sorted_cards(play.played)),
        "to_hand": cards_str(sorted_cards(play.to_hand)),
        "points": play.points,
        "seconds": round(time.perf_counter() - started, 6),
    }
    return Answer(json.dumps(body))


def decode(records: Sequence[bytes]) -> list[StoredEvent]:
    """A log as the store's records hold it, decoded and upcast as the store reads it."""
    return [codec.decode(record, codec.UPCASTERS) for record in records]


def replay(
    records: Sequence[bytes],
    turn: int | None,
    version: int | None,
    viewer: Any,
    head: dict[str, Any],
) -> Answer:
    """The replay of a turn or version as ``viewer`` may see it (``shared.audit.replay``), with
    the game's ``head`` as its receipt; 404 when there is no such turn or version."""
    from shared.audit.replay import ReplayError
    from shared.audit.replay import replay as replay_of

    try:
        body = replay_of(decode(records), turn=turn, version=version, viewer=viewer)
    except ReplayError as err:
        return Answer(str(err), 404, "not_found")
    return Answer(json.dumps(body | {"head": head}))


def picture(records: Sequence[bytes], turn: int, viewer: Any) -> Answer:
    """Turn ``turn`` drawn as SVG (``shared.pictures.turn``) from its replay as ``viewer`` may
    see it; 404 when there is no such turn."""
    from shared.audit.replay import ReplayError
    from shared.audit.replay import replay as replay_of
    from shared.pictures.turn import turn_picture

    try:
        shown = replay_of(decode(records), turn=turn, viewer=viewer)
    except ReplayError as err:
        return Answer(str(err), 404, "not_found")
    return Answer(turn_picture(shown))


def export(records: Sequence[bytes]) -> Answer:
    """The game record (``docs/record-format.md``) as text."""
    from shared.audit.record import RecordError, build_record, dumps

    try:
        return Answer(dumps(build_record(decode(records))))
    except RecordError as err:
        return Answer(f"the game cannot be exported: {err}", 500, "bad_request")
