"""Tournaments' routes that read one: the tournament lobby, a tournament (entrants, rounds and
their tables with game ids, live standings and their history with every ruling and its reason),
and its log page by page (for audit). Everything in a tournament is public; its games keep
their own secrets (``tournament_view``). Tournaments are read from their logs through the desk
(``shared.infra.tournaments``), which keeps their folded states; a finished one Redis has let go
is read from the archive by the same calls (``services/gateway/archived.py``)."""

from __future__ import annotations

from aiohttp import web

from services.gateway.bodies import TournamentEvent, TournamentEvents, TournamentLobby
from services.gateway.errors import ApiError
from services.gateway.params import whole_number
from services.gateway.routes.accounts import ACCOUNTS
from services.gateway.state import GATEWAY
from services.gateway.tournament_view import (
    EVENTS_PAGE,
    MAX_CURSOR,
    summary_json,
    tournament_json,
)
from shared.infra import jsontext
from shared.infra.tournaments import ALL, MAX_PAGE, PAGE, STATUSES, Folded
from shared.tournament.commands import TOURNAMENT_ID

LISTINGS = (ALL, *STATUSES)
VIEWS_KEPT = 64  # tournament views kept built, the most recently asked for


async def loaded(request: web.Request, tournament_id: str) -> Folded:
    """The tournament as its log has it now (with the log's head), or 404."""
    if not TOURNAMENT_ID.fullmatch(tournament_id):
        raise ApiError(
            404, "not_found", f"no tournament {tournament_id!r} (ids are 't' and 16 hex digits)"
        )
    folded = await request.app[GATEWAY].tournaments.log.load(tournament_id)
    if not folded.state.status:
        raise ApiError(404, "not_found", f"no tournament {tournament_id!r}")
    return folded


async def view_response(request: web.Request, folded: Folded, status: int = 200) -> web.Response:
    """The tournament's view as the answer: built once per version of its log (and kept for
    the next viewers of that version)."""
    director = folded.state.director
    name = (await request.app[ACCOUNTS].names([director]))[director]
    views = request.app[GATEWAY].tournament_views
    key = (folded.state.tournament_id, folded.version, name)
    body = views.pop(key, None)
    if body is None:
        body = jsontext.dumps_bytes(tournament_json(folded.state, name, folded.head))
    views[key] = body
    while len(views) > VIEWS_KEPT:
        views.popitem(last=False)
    return web.Response(body=body, status=status, content_type="application/json")


async def list_tournaments(request: web.Request) -> web.Response:
    """The tournament lobby: the tournaments of one status (or all), newest first."""
    gw = request.app[GATEWAY]
    gw.limits.read(request)
    status = request.query.get("status", ALL)
    if status not in LISTINGS:
        raise ApiError(
            422,
            "bad_request",
            f"status is {status!r}; allowed: {', '.join(LISTINGS)}",
            option="status",
        )
    cursor = whole_number(request.query.get("cursor", "0"), "cursor", MAX_CURSOR)
    limit = whole_number(request.query.get("limit", str(PAGE)), "limit", MAX_PAGE, minimum=1)
    page = await gw.tournaments.page(status, cursor, limit)
    rows = page["tournaments"]
    names = await request.app[ACCOUNTS].names([row["director"] for row in rows])
    after = page["next"]
    doc: TournamentLobby = {
        "tournaments": [summary_json(row, names[row["director"]]) for row in rows],
        "next": None if after is None else str(after),
    }
    return web.json_response(doc)


async def get_tournament(request: web.Request) -> web.Response:
    """One tournament, whole."""
    request.app[GATEWAY].limits.read(request)
    return await view_response(request, await loaded(request, request.match_info["tournament_id"]))


async def list_events(request: web.Request) -> web.Response:
    """The tournament's log after ``after``, each event with its place in the hash chain."""
    gw = request.app[GATEWAY]
    await gw.limits.at_address(request, gw.limits.replay)
    tournament_id = request.match_info["tournament_id"]
    after = whole_number(request.query.get("after", "0"), "after")
    limit = whole_number(
        request.query.get("limit", str(EVENTS_PAGE)), "limit", EVENTS_PAGE, minimum=1
    )
    folded = await loaded(request, tournament_id)
    stored = await gw.tournaments.log.store.read(tournament_id, after, limit)
    doc: TournamentEvents = {
        "tournament_id": tournament_id,
        "events": [
            TournamentEvent(
                version=s.version, time=s.time, hash=s.hash, type=s.type, data=dict(s.data)
            )
            for s in stored
        ],
        "version": folded.version,
        "head": folded.head,
    }
    return web.json_response(doc, dumps=jsontext.dumps)
