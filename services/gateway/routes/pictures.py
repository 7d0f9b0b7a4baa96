"""The picture of a turn: ``GET /api/games/{id}/turns/{n}.svg``, turn ``n`` (as the views number
turns) drawn as SVG for a dispute report (``shared.pictures.turn``).

It is the replay of that turn, drawn: shown to the requester as the replay route shows it (a seat
token its own hand only, the host token or none what a spectator sees, everyone everything once
the game has ended, the operator token everything at any time), worked out in the gateway's
worker processes within ``RUMMY_REPLAY_SECONDS`` under the replay's rate limit, and kept by
game, version, turn and viewer as a replay is.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from services.gateway import jobs
from services.gateway.answers import Job, respond
from services.gateway.params import whole_number
from services.gateway.routes.replay import is_operator
from services.gateway.state import GATEWAY
from shared.audit.replay import SPECTATOR

MEDIA_TYPE = "image/svg+xml"
# The picture is a document of its own when opened: nothing in it may run or load anything.
HEADERS = {
    "Content-Security-Policy": "default-src 'none'",
    "X-Content-Type-Options": "nosniff",
}


async def turn_picture(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    address = await gw.limits.at_address(request)
    taken = await gw.limits.take(gw.limits.replay, address)
    turn = whole_number(request.match_info["turn"], "turn", minimum=1)
    loaded = await gw.load(game_id)
    viewer: Any = None  # everything: a finished game, or the operator
    if loaded.state.status != "finished" and not is_operator(request, gw.settings.operator_token):
        role = await gw.viewer(request, game_id, required=False)
        viewer = int(role) if role is not None and role.isdigit() else SPECTATOR

    async def job() -> Job:
        records = await gw.store.records(game_id, limit=loaded.version)
        return jobs.picture, (records, turn, viewer)

    key = ("picture", game_id, loaded.version, turn, viewer)
    budget = gw.settings.replay_seconds
    answer = await gw.answers.answer("replay", key, job, budget, address, taken)
    return respond(answer, content_type=MEDIA_TYPE, charset="utf-8", headers=dict(HEADERS))
