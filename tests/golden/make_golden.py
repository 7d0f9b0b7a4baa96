"""Write the golden games (``tests/golden/*.json``): short scripted games per preset, like perft
and PGN files for chess engines. ``tests/engine/test_golden.py`` replays them.

Each file holds the rules, options, the secret seed (hex) and player seeds, every command in its
JSON form with the time it was decided at, every event as ``{"type", "data"}`` and the expected
final table and hands in card notation. The commands come from bots with fixed seeds (the first
seed, of a fixed list, whose game fits the spec: short, and showing the events the spec asks
for), so the script is deterministic. Rewrite the files only on purpose (a deliberate change of
``decide``), and review the diff:

    .venv/bin/python tests/golden/make_golden.py          # write the files
    .venv/bin/python tests/golden/make_golden.py --check  # exit 1 if a file would change
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.helpers import bots, hand_text, table_text

from shared.core.codes import Rejection
from shared.core.commands import Command, command_json
from shared.core.events import (
    CardDrawn,
    Event,
    RoundDealt,
    RoundEnded,
    to_data,
)
from shared.play.selfplay import SelfPlay

HERE = Path(__file__).resolve().parent
TRIES = 300


def ended(reason: str) -> Callable[[list[Event]], bool]:
    """The game has a round that ended this way (``out`` or ``stalled``)."""
    return lambda events: any(isinstance(e, RoundEnded) and e.reason == reason for e in events)


def pile_draw(events: list[Event]) -> bool:
    """Someone took the pile's top card."""
    return any(isinstance(e, CardDrawn) and e.source == "pile" for e in events)


def penalty_draw(events: list[Event]) -> bool:
    """Someone drew the failed-turn draw after a rejected layout."""
    return any(isinstance(e, CardDrawn) and e.penalty for e in events)


def rounds(n: int) -> Callable[[list[Event]], bool]:
    """At least ``n`` rounds were dealt."""
    return lambda events: sum(isinstance(e, RoundDealt) for e in events) >= n


@dataclass(frozen=True)
class Spec:
    """One golden game: rules and options, the bots, and what the game must show."""

    name: str
    description: str
    rules: str
    options: dict[str, Any]
    bots: str
    max_events: int
    wanted: tuple[str, ...] = ()  # event types the game must contain
    timeout_rate: float = 0.0
    checks: tuple[Callable[[list[Event]], bool], ...] = ()


ALWAYS = ("GameCreated", "StarterChosen", "RoundDealt", "RoundEnded", "MatchEnded", "SeedRevealed")
SPECS = [
    Spec(
        "robbers-out",
        "robbers, 2 seats, 40-card hands, no opening, one round: illegal layouts, going out",
        "robbers",
        {"match": "single", "hand_size": 40, "opening_points": 0},
        "clumsy,greedy",
        170,
        ("CommandRejected", "TurnPlayed"),
        checks=(ended("out"),),
    ),
    Spec(
        "robbers-timer",
        "robbers, 2 seats, 40-card hands, 40-point opening, 120 s turns with timeouts and a "
        "failed-turn draw",
        "robbers",
        {"match": "single", "hand_size": 40, "turn_seconds": 120},
        "clumsy,random",
        200,
        ("TurnTimedOut", "CommandRejected", "TurnPlayed"),
        timeout_rate=0.15,
        checks=(penalty_draw,),
    ),
    Spec(
        "robbers-stall",
        "robbers, 2 seats, 50-card hands and a 4-card stock: passes until the table stalls",
        "robbers",
        {"match": "single", "hand_size": 50, "jokers": 0, "opening_points": 0},
        "greedy,random",
        120,
        ("TurnPassed",),
        checks=(ended("stalled"),),
    ),
    Spec(
        "robbers-pile",
        "robbers with the discard pile (Decision 10), 3 seats: pile draws, discards, a reshuffle",
        "robbers",
        {"match": "single", "discard_pile": True, "hand_size": 30, "opening_points": 0},
        "pile-clumsy,pile-greedy,random",
        200,
        ("CardDiscarded", "StockReshuffled", "TurnPlayed"),
        checks=(pile_draw,),
    ),
    Spec(
        "robbers-match",
        "robbers, 2 seats, a match of two rounds: score sheets, the next deal, the match's end",
        "robbers",
        {"match_rounds": 2, "hand_size": 45, "opening_points": 0},
        "greedy,clumsy",
        320,
        ("ScoresRecorded", "TurnPlayed"),
        checks=(rounds(2),),
    ),
    Spec(
        "classic-out",
        "robbers-classic, 2 seats, 40-card hands: place, draw, place, end, and going out",
        "robbers-classic",
        {"hand_size": 40},
        "greedy,clumsy",
        150,
        ("TurnPlayed", "CommandRejected"),
        checks=(ended("out"),),
    ),
    Spec(
        "classic-timer",
        "robbers-classic, 3 seats, 30-card hands, 30 s turns with timeouts",
        "robbers-classic",
        {"hand_size": 30, "turn_seconds": 30},
        "random,greedy,clumsy",
        200,
        ("TurnTimedOut", "TurnPlayed"),
        timeout_rate=0.1,
    ),
    Spec(
        "rummikub-single",
        "rummikub, 2 seats, 40 tiles, one game, 60 s turns with timeouts, 30-point opening",
        "rummikub",
        {"match": "single", "hand_size": 40},
        "clumsy,greedy",
        200,
        ("TurnTimedOut", "CommandRejected", "TurnPlayed"),
        timeout_rate=0.1,
    ),
    Spec(
        "rummikub-match",
        "rummikub, 2 seats, 45 tiles, as many games as seats: plus/minus sheets, the match's end",
        "rummikub",
        {"hand_size": 45, "opening_points": 0},
        "greedy,random",
        320,
        ("ScoresRecorded", "TurnPlayed"),
        checks=(rounds(2),),
    ),
]


class Recorder(SelfPlay):
    """A self-played game that also records each command and the time it was decided at."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands: list[tuple[float, Command]] = []

    def apply(self, command: Command) -> list[Event] | Rejection:
        """Decide and fold one command (``SelfPlay.apply``), remembering it."""
        answer = super().apply(command)
        assert not isinstance(answer, Rejection), f"a bot's command was refused: {answer}"
        self.commands.append((self.now, command))
        return answer


def fits(spec: Spec, game: Recorder) -> bool:
    """Whether a played game is short and shows what the spec wants."""
    report = game.report
    if not report.finished or report.violations or len(report.events) > spec.max_events:
        return False
    kinds = {e.TYPE for e in report.events}
    if not {*ALWAYS, *spec.wanted} <= kinds:
        return False
    return all(check(report.events) for check in spec.checks)


def golden(spec: Spec) -> dict[str, Any]:
    """The golden record of the first fitting game."""
    for attempt in range(TRIES):
        seed = hashlib.sha256(f"golden/{spec.name}/{attempt}".encode()).digest()
        game = Recorder(
            spec.rules,
            spec.options,
            bots(spec.bots),
            seed,
            random.Random(attempt),
            timeout_rate=spec.timeout_rate,
        )
        game.play()
        if not fits(spec, game):
            continue
        state = game.report.state
        seats = len(game.bots)
        return {
            "name": spec.name,
            "description": spec.description,
            "rules": spec.rules,
            "options": spec.options,
            "seats": seats,
            "game_id": game.create.game_id,
            "seed": seed.hex(),
            "player_seeds": list(state.seeds),
            "bots": spec.bots.split(","),
            "commands": [{"now": now, "command": command_json(c)} for now, c in game.commands],
            "events": [{"type": e.TYPE, "data": to_data(e)} for e in game.report.events],
            "final": {
                "status": state.status,
                "round": state.round,
                "winners": list(state.winners),
                "table": table_text(state.table),
                "hands": [hand_text(h) for h in state.hands],
            },
        }
    raise SystemExit(f"no game fits {spec.name} in {TRIES} tries")


def render(record: dict[str, Any]) -> str:
    """The file's text: one command or event per line, so that diffs are readable."""
    head = {k: v for k, v in record.items() if k not in ("commands", "events", "final")}
    lines = ["{"]
    for key, value in head.items():
        lines.append(f"  {json.dumps(key)}: {json.dumps(value)},")
    for key in ("commands", "events"):
        items = [f"    {json.dumps(item)}" for item in record[key]]
        lines.append(f'  "{key}": [\n' + ",\n".join(items) + "\n  ],")
    lines.append(f'  "final": {json.dumps(record["final"])}')
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    """Write (or with ``--check`` compare) every golden file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    changed = []
    for spec in SPECS:
        path = HERE / f"{spec.name}.json"
        text = render(golden(spec))
        assert json.loads(text)["name"] == spec.name
        if path.exists() and path.read_text() == text:
            continue
        changed.append(path.name)
        if not args.check:
            path.write_text(text)
    print(("would change: " if args.check else "written: ") + (", ".join(changed) or "none"))
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
