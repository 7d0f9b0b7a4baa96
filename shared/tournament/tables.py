"""Where a tournament meets its games: a table's game id, and a table's results read from its
finished game.

The game id is derived from the tournament, the round and the table, so a create the service
sends again after a crash names the same game (which the referee then refuses as existing)
instead of a second one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from shared.core.events import Event as GameEvent
from shared.core.events import MatchEnded, PlayerSeated, SeatLeft
from shared.tournament.events import BOT, SeatResult


def table_game_id(tournament_id: str, round: int, table: int) -> str:
    """The id of the game of table ``table`` in round ``round``: ``g`` + 16 hex digits."""
    digest = hashlib.sha256(f"tournament:{tournament_id}:{round}:{table}".encode()).hexdigest()
    return "g" + digest[:16]


def seated_players(events: Iterable[GameEvent]) -> tuple[str, ...]:
    """Who sat where in a game, by seat, as entrants are named: the account's id
    (``PlayerSeated.player``) or ``bot:<name>`` for a bot's seat; "" for a guest's seat."""
    seats: dict[int, str] = {}
    for event in events:
        if isinstance(event, PlayerSeated):
            seats[event.seat] = f"{BOT}{event.bot}" if event.bot else event.player
        elif isinstance(event, SeatLeft):
            seats.pop(event.seat, None)
    return tuple(seats.get(seat, "") for seat in range(max(seats, default=-1) + 1))


def table_result(players: Sequence[str], ended: MatchEnded) -> tuple[SeatResult, ...]:
    """A table's results from its game's ``MatchEnded``: one line per seat, ``players[seat]``
    being who sat there (``seated_players``)."""
    if len(players) != len(ended.outs):
        raise ValueError(
            f"the game has {len(ended.outs)} seats but {len(players)} players were given"
        )
    return tuple(
        SeatResult(
            player=player,
            seat=seat,
            winner=seat in ended.winners,
            total=None if ended.totals is None else ended.totals[seat],
            outs=ended.outs[seat],
            wins=ended.wins[seat],
        )
        for seat, player in enumerate(players)
    )
