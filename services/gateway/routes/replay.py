"""The gateway's replay and export routes.

``GET /api/games/{id}/replay?turn=N`` (or ``?version=V``): one turn before and after, every
command in it re-judged (``shared.audit.replay``). While the game is live it is shown from the
requester's point of view: a seat token sees its own hand only, no token or the host token what a
spectator sees, and nobody the stock order or another seat's rejected layout. Once the game has
ended (or to the operator token) everything is shown.

``GET /api/games/{id}/export``: the game record (``docs/record-format.md``) as JSON lines, once
the game has ended, to anyone; at any time with ``Authorization: Bearer <operator token>`` when
the server has one (``RUMMY_OPERATOR_TOKEN``). While a game is live anyone else gets 409
``not_finished``: a seat can only keep receipts until then.

Both are worked out in the gateway's worker processes (``answers.Answers``) from the log's raw
records, never on the event loop, within ``RUMMY_REPLAY_SECONDS`` (past it: 503
``replay_timeout`` / ``export_timeout``; every worker busy: 503 ``solver_busy`` with
``Retry-After``, which gives back the pass the replay limit took). A replay is kept by game,
version, turn or version asked and viewer, so the same replay asked again costs nothing; an
export is not (its header says when it was exported).
"""

from __future__ import annotations

import hmac
from typing import Any

from aiohttp import web

from services.gateway import jobs
from services.gateway.answers import Job, respond
from services.gateway.errors import ApiError
from services.gateway.params import whole_number
from services.gateway.state import GATEWAY, Gateway
from shared.audit.record import MEDIA_TYPE
from shared.audit.replay import SPECTATOR


def _bearer(request: web.Request) -> str:
    header = request.headers.get("Authorization", "")
    return header[7:].strip() if header.lower().startswith("bearer ") else ""


def is_operator(request: web.Request, operator_token: str) -> bool:
    """Whether the request carries the server's operator token (never true when none is set)."""
    token = _bearer(request)
    return bool(operator_token) and bool(token) and hmac.compare_digest(token, operator_token)


def _number(request: web.Request, name: str) -> int | None:
    text = request.query.get(name)
    return None if text is None else whole_number(text, name, minimum=1)


async def _records(gw: Gateway, game_id: str, version: int) -> list[bytes]:
    """The log's records up to ``version`` (the state's the answer's receipt names)."""
    return await gw.store.records(game_id, limit=version)


async def replay_turn(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    address = await gw.limits.at_address(request)
    taken = await gw.limits.take(gw.limits.replay, address)
    turn, version = _number(request, "turn"), _number(request, "version")
    if (turn is None) == (version is None):
        raise ApiError(422, "bad_request", "give either ?turn=N or ?version=V")
    loaded = await gw.load(game_id)
    viewer: Any = None  # everything: a finished game, or the operator
    if loaded.state.status != "finished" and not is_operator(request, gw.settings.operator_token):
        role = await gw.viewer(request, game_id, required=False)
        viewer = int(role) if role is not None and role.isdigit() else SPECTATOR
    head = {"version": loaded.version, "hash": loaded.head}

    async def job() -> Job:
        records = await _records(gw, game_id, loaded.version)
        return jobs.replay, (records, turn, version, viewer, head)

    key = (game_id, loaded.version, turn, version, viewer)
    budget = gw.settings.replay_seconds
    return respond(await gw.answers.answer("replay", key, job, budget, address, taken))


async def export_game(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    address = await gw.limits.at_address(request)
    taken = await gw.limits.take(gw.limits.replay, address)
    loaded = await gw.load(game_id)
    operator = is_operator(request, gw.settings.operator_token)
    if loaded.state.status != "finished" and not operator:
        raise ApiError(
            409,
            "not_finished",
            "the game record is available once the game has ended; until then keep the "
            "receipts (version and head) of your views and answers",
        )

    async def job() -> Job:
        return jobs.export, (await _records(gw, game_id, loaded.version),)

    budget = gw.settings.replay_seconds
    answer = await gw.answers.answer("export", None, job, budget, address, taken)
    return respond(
        answer,
        content_type=MEDIA_TYPE,
        charset="utf-8",
        headers={"Content-Disposition": f'attachment; filename="{game_id}.rrec"'},
    )
