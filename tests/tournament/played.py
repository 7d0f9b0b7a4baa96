"""A tournament played for the audit's tests: the core decides every command (``Desk``), each
table's game is self-played by bots with the entrants seated in it, and both logs are chained
as the store's append chains them (one append per command), so they can be audited as read
from a store, or put in one."""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

from shared.audit.source import StoredGame
from shared.core.events import Event as GameEvent
from shared.core.events import MatchEnded, PlayerSeated
from shared.infra.chain import chain
from shared.infra.gamelog import to_new
from shared.infra.stored import GENESIS_HASH, NewEvent, StoredEvent
from shared.play.bots import BOTS
from shared.play.selfplay import SelfPlay
from shared.tournament.events import Event, to_data
from shared.tournament.state import Table
from shared.tournament.tables import seated_players, table_result
from tests.audit.games import rechain
from tests.tournament.desk import TOURNAMENT, Desk

RULES = "robbers"
OPTIONS: dict[str, Any] = {"match_rounds": 1}


def play_table(table: Table, rules: str, options: dict[str, Any], luck: int) -> StoredGame:
    """Table ``table``'s game between greedy bots, its seats taken by the table's entrants."""
    seed = random.Random(luck).randbytes(32)
    batches: list[tuple[float, list[GameEvent]]] = []
    bots = [BOTS["greedy"]() for _ in table.seats]
    player = SelfPlay(rules, dict(options), bots, seed, random.Random(luck), check=False)
    player.create = replace(player.create, game_id=table.game_id)

    def collect(event: GameEvent) -> None:
        if isinstance(event, PlayerSeated):
            event = replace(event, player=table.seats[event.seat])
        if batches and batches[-1][0] == player.now:
            batches[-1][1].append(event)
        else:
            batches.append((player.now, [event]))

    player.on_event = collect
    report = player.play()
    assert report.finished, table
    stored: list[StoredEvent] = []
    head = GENESIS_HASH
    for index, (now, events) in enumerate(batches):
        new = [to_new(e, "service") for e in events]
        stored += chain(table.game_id, new, len(stored) + 1, head, f"c{index}", now)
        head = stored[-1].hash
    return StoredGame(table.game_id, tuple(stored), (stored[-1].version, stored[-1].hash))


def _finished(game: StoredGame) -> dict[str, Any]:
    from shared.audit.tournament import _domain

    events = _domain(game.events)
    ended = next(e for e in events if isinstance(e, MatchEnded))
    results = table_result(seated_players(events), ended)
    return {
        "results": [
            {
                "player": r.player,
                "seat": r.seat,
                "winner": r.winner,
                "total": r.total,
                "outs": r.outs,
                "wins": r.wins,
            }
            for r in results
        ],
        "head": list(game.head),
    }


@dataclass
class Played:
    """A tournament's events (as decided) and its tables' games, by game id."""

    desk: Desk
    games: dict[str, StoredGame] = field(default_factory=dict)

    def play_round(self, luck: int) -> None:
        """Pair the next round and play and record every table."""
        for table in self.desk.pair():
            game = play_table(table, self.desk.state.rules, self.desk.state.options, luck)
            luck += 1
            self.games[table.game_id] = game
            payload = {"round": table.round, "table": table.table, "game_id": table.game_id}
            self.desk.send("table_finished", payload | _finished(game), "service")

    def log(self) -> list[StoredEvent]:
        """The tournament's log as the store chains it: one append per event."""
        return chained(self.desk.log)


def chained(events: list[Event], tournament_id: str = TOURNAMENT) -> list[StoredEvent]:
    """``events`` chained into a tournament log, one append each."""
    out: list[StoredEvent] = []
    head = GENESIS_HASH
    for index, event in enumerate(events):
        new = NewEvent(event.TYPE, to_data(event), event.SCHEMA, "service")
        (stored,) = chain(tournament_id, [new], index + 1, head, f"t{index}", 1.7e9 + index)
        out.append(stored)
        head = stored.hash
    return out


def played(entrants: int = 4, rounds: int = 2, seats: int = 2, luck: int = 1) -> Played:
    """A Swiss of ``entrants`` at tables of ``seats``, every round played and finished."""
    desk = Desk().open(
        entrants,
        rules=RULES,
        seats=seats,
        rounds=rounds,
        options=OPTIONS,
        ratings=[float(entrants - i) for i in range(entrants)],
    )
    out = Played(desk)
    for number in range(rounds):
        out.play_round(luck + 100 * number)
    if desk.state.status != "finished":
        desk.send("finish", {}, "service")
    return out


def rewritten(log: list[StoredEvent], version: int, **data: Any) -> list[StoredEvent]:
    """The log with event ``version``'s data changed and every hash from it recomputed (what
    someone rewriting the log would do so that the chain alone holds)."""
    changed = replace(log[version - 1], data={**log[version - 1].data, **data})
    return rechain([*log[: version - 1], changed, *log[version:]], version - 1)


def without(log: list[StoredEvent], version: int) -> list[StoredEvent]:
    """The log with event ``version`` removed and the rest re-chained."""
    rest = [replace(e, version=e.version - 1) for e in log[version:]]
    return rechain([*log[: version - 1], *rest], version - 1)
