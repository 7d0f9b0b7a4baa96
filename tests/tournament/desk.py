"""A tournament run in memory for the core's tests: each command goes through ``command_from``
(as the edges build them) and ``decide``, and the events it makes are folded on and kept, so a
test can compare the live state with a replay of the log."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from shared.tournament.commands import SERVICE, command_from
from shared.tournament.decide import decide
from shared.tournament.events import Event
from shared.tournament.state import Table, Tournament, evolve

DIRECTOR = "a" * 32  # an account id, as the gateway's are
TOURNAMENT = "t" + "0123456789abcdef"


def create_payload(
    rounds: int, seats: int, tournament_id: str = TOURNAMENT, **changes: Any
) -> dict[str, Any]:
    """The service's ``create`` of a tournament: a Swiss of robbers, one round a game, byes in
    the empty seats (``changes`` on top)."""
    return {
        "tournament_id": tournament_id,
        "name": "Club night",
        "rules": "robbers",
        "options": {"match_rounds": 1},
        "format": "swiss",
        "rounds": rounds,
        "table_seats": seats,
        "fill": "byes",
    } | changes


def player(i: int) -> str:
    """The account id of test entrant ``i``."""
    return f"{i:032x}"


@dataclass
class Desk:
    """One tournament and its log."""

    state: Tournament = field(default_factory=Tournament)
    log: list[Event] = field(default_factory=list)

    def send(
        self, kind: str, payload: dict[str, Any] | None = None, actor: str = DIRECTOR
    ) -> list[Event]:
        """Decide one command and fold its events on (a refusal raises and changes nothing)."""
        events = decide(self.state, command_from(kind, payload or {}), actor)
        for event in events:
            self.state = evolve(self.state, event)
        self.log.extend(events)
        return events

    def open(
        self,
        entrants: int,
        *,
        rules: str = "rummikub",
        seats: int = 2,
        rounds: int = 3,
        fill: str = "byes",
        format: str = "swiss",
        ratings: Sequence[float] | None = None,
        options: dict[str, Any] | None = None,
    ) -> Desk:
        """Create, open, register ``entrants`` (rated ``ratings``, else all 0) and close."""
        self.send(
            "create",
            {
                "tournament_id": TOURNAMENT,
                "name": "Club night",
                "rules": rules,
                "options": options or {},
                "format": format,
                "rounds": rounds,
                "table_seats": seats,
                "fill": fill,
            },
        )
        self.send("open")
        for i in range(entrants):
            rating = 0.0 if ratings is None else ratings[i]
            self.send(
                "register", {"player": player(i), "name": f"P{i}", "rating": rating}, player(i)
            )
        self.send("close")
        return self

    def pair(self) -> tuple[Table, ...]:
        """Pair the next round (as the service does); its tables."""
        self.send("pair", {"round": self.state.current + 1}, SERVICE)
        return self.state.played[-1].tables

    def finish(self, table: Table, lines: Sequence[dict[str, Any]]) -> list[Event]:
        """Record ``table``'s results: ``lines[i]`` is seat ``i``'s (winner, total, outs, wins;
        missing keys are 0 / False)."""
        results = [
            {
                "player": who,
                "seat": seat,
                "winner": bool(lines[seat].get("winner", False)),
                "total": lines[seat].get("total", 0),
                "outs": lines[seat].get("outs", 0),
                "wins": lines[seat].get("wins", 0),
            }
            for seat, who in enumerate(table.seats)
        ]
        payload = {
            "round": table.round,
            "table": table.table,
            "game_id": table.game_id,
            "results": results,
            "head": [42, "f" * 64],
        }
        return self.send("table_finished", payload, SERVICE)

    def finish_by(self, table: Table, order: Sequence[str]) -> list[Event]:
        """Record ``table`` as finished in the order ``order`` of its players (first wins), with
        results of the tournament's family that rank them so."""
        rules = self.state.rules
        n = len(table.seats)
        lines = []
        for who in table.seats:
            place = order.index(who)
            if rules == "rummikub":
                lines.append({"winner": place == 0, "wins": n - place, "total": 10 * (n - place)})
            elif rules == "robbers-classic":
                lines.append({"winner": place == 0, "total": None, "wins": int(place == 0)})
            else:
                lines.append({"winner": place == 0, "total": 10 * place, "outs": n - place})
        return self.finish(table, lines)

    def play_round(self, rng: random.Random) -> None:
        """Pair and finish a round with random results of the tournament's family."""
        for table in self.pair():
            self.finish(table, random_lines(rng, self.state.rules, len(table.seats)))


def random_lines(rng: random.Random, rules: str, seats: int) -> list[dict[str, Any]]:
    """A table's random results of family ``rules``: one winner or more, totals, outs, wins."""
    winners = {rng.randrange(seats)}
    if rng.random() < 0.1:
        winners.add(rng.randrange(seats))
    return [
        {
            "winner": seat in winners,
            "total": None if rules == "robbers-classic" else rng.randint(-60, 150),
            "outs": rng.randint(0, 3),
            "wins": rng.randint(0, 4),
        }
        for seat in range(seats)
    ]
