"""A tournament as the API shows it, built from its state (``shared.tournament.state``): every
fact of it is public, so there is one view for everyone. Its games keep their own secrets: a
table shows who sits where and, once over, the results its game's ``MatchEnded`` gave (totals,
rounds gone out and won), never a hand, the stock or a seed.

Live standings are worked out from the state as it is (every finished table and ruling so far),
where the recorded ones (``history``) are those the log holds, after each round is over (and
again after a ruling changed them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

from services.gateway.bodies import (
    EntrantRow,
    RoundView,
    RulingView,
    Someone,
    StandingRow,
    StandingsAfter,
    TableResult,
    TableSeat,
    TableView,
    TournamentSummary,
    TournamentView,
)
from shared.tournament.events import BOT, Standing
from shared.tournament.standings import criteria, standings
from shared.tournament.state import Status, Table, Tournament

MAX_CURSOR = 10**9  # the lobby's cursor at most
EVENTS_PAGE = 500  # events on one page of a tournament's log at most
RulingKind = Literal["annul", "forfeit", "verdict"]


def bot_name(player: str) -> str:
    """How a bot's seat is shown (as a game shows it: ``greedy bot``)."""
    return f"{player[len(BOT) :]} bot"


def _names(state: Tournament, director: str) -> dict[str, str]:
    names = {e.player: e.name for e in state.entrants}
    names[state.director] = director
    return names


def _name(names: Mapping[str, str], player: str) -> str:
    if player.startswith(BOT):
        return bot_name(player)
    return names.get(player, player)


def _someone(names: Mapping[str, str], player: str) -> Someone:
    return Someone(player=player, name=_name(names, player))


def _row(names: Mapping[str, str], row: Standing) -> StandingRow:
    return StandingRow(
        rank=row.rank,
        player=row.player,
        name=row.name or _name(names, row.player),
        score=row.score,
        keys=list(row.keys),
        tables=row.tables,
        byes=row.byes,
        forfeits=row.forfeits,
        withdrawn=row.withdrawn,
        notes=list(row.notes),
    )


def _rows(names: Mapping[str, str], rows: Sequence[Standing]) -> list[StandingRow]:
    return [_row(names, row) for row in rows]


def _table(names: Mapping[str, str], table: Table) -> TableView:
    return TableView(
        table=table.table,
        game_id=table.game_id,
        status=table.status,
        seats=[
            TableSeat(seat=n, player=p, name=_name(names, p), bot=p.startswith(BOT))
            for n, p in enumerate(table.seats)
        ],
        results=[
            TableResult(
                player=r.player,
                name=_name(names, r.player),
                seat=r.seat,
                winner=r.winner,
                total=r.total,
                outs=r.outs,
                wins=r.wins,
            )
            for r in table.results
        ],
        head=list(table.head) if table.head is not None else None,
        watch=f"/#/game/{table.game_id}/watch",
        replay=f"/#/game/{table.game_id}/replay/1",
    )


def summary_json(row: Mapping[str, Any], director: str) -> TournamentSummary:
    """A tournament as the lobby lists it (``row``: the listing's summary of it);
    ``director``: its director's name."""
    return TournamentSummary(
        tournament_id=row["tournament_id"],
        name=row["name"],
        status=row["status"],
        rules=row["rules"],
        format=row["format"],
        rounds=row["rounds"],
        round=row["round"],
        table_seats=row["table_seats"],
        fill=row["fill"],
        entrants=row["entrants"],
        director=Someone(player=row["director"], name=director),
        version=row["version"],
    )


def _status(state: Tournament) -> Status:
    if not state.status:
        raise ValueError(f"no tournament {state.tournament_id!r}: a fold over no events")
    return state.status


def tournament_json(state: Tournament, director: str, head: str) -> TournamentView:
    """The whole tournament; ``director``: its director's name, ``head``: its log's head."""
    names = _names(state, director)
    return TournamentView(
        tournament_id=state.tournament_id,
        name=state.name,
        status=_status(state),
        director=Someone(player=state.director, name=director),
        rules=state.rules,
        options=dict(state.options),
        format=state.format,
        rounds=state.rounds,
        round=state.current,
        table_seats=state.table_seats,
        fill=state.fill,
        entrants=[
            EntrantRow(player=e.player, name=e.name, rating=e.rating, withdrawn=e.withdrawn)
            for e in state.entrants
        ],
        played=[
            RoundView(
                round=r.number,
                tables=[_table(names, t) for t in r.tables],
                byes=[_someone(names, p) for p in r.byes],
            )
            for r in state.played
        ],
        criteria=list(criteria(state.rules)),
        standings=_rows(names, standings(state)) if state.played else [],
        history=[
            StandingsAfter(round=number, standings=_rows(names, rows))
            for number, rows in state.history
        ],
        rulings=[
            RulingView(
                kind=cast(RulingKind, r.kind),
                round=r.round,
                table=r.table,
                player=r.player,
                player_name=_name(names, r.player) if r.player else "",
                reason=r.reason,
                turn=r.turn,
                verdict=r.verdict,
            )
            for r in state.rulings
        ],
        version=state.version,
        head=head,
    )
