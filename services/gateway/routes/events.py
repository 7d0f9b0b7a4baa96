"""``GET /api/games/{id}/events``: a game's events as the requester may see them, a page at a
time after a version."""

from __future__ import annotations

from aiohttp import web

from services.gateway.params import seat_of, whole_number
from services.gateway.state import GATEWAY, event_for

EVENTS_PAGE = 500


async def list_events(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    await gw.limits.at_address(request, gw.limits.replay)
    loaded = await gw.load(game_id)
    seat = seat_of(await gw.viewer(request, game_id, required=False))
    after = min(whole_number(request.query.get("after", "0"), "after"), loaded.version)
    finished = loaded.state.status == "finished"
    stored = await gw.games.store.read(game_id, after=after, limit=EVENTS_PAGE)
    events = [event_for(s, seat, finished) for s in stored]
    return web.json_response({"events": events, "version": loaded.version, "head": loaded.head})
