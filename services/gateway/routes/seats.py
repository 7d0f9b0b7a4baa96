"""A seat's routes: take a seat, send a command from it."""

from __future__ import annotations

import time
import uuid

from aiohttp import web

from services.gateway.errors import ApiError, status_for
from services.gateway.idempotency import request_key
from services.gateway.params import bearer_token, json_body, seat_of
from services.gateway.routes.games import forward_keyed
from services.gateway.state import GATEWAY
from shared.infra import jsontext
from shared.infra.bus import CommandEntry


async def take_seat(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    await gw.limits.at_address(request, gw.limits.seat)
    key = request_key(request)
    await gw.load(game_id)
    body = await json_body(request)
    unknown = set(body) - {"name", "seed"}
    if unknown:
        raise ApiError(422, "bad_request", f"unknown fields {sorted(unknown)}")
    # A retry with the same key sends the same command id: the referees answer it with the seat
    # the first try got (or give the seat now, if the first try never arrived).
    command_id = await gw.idempotency.sit(game_id, key, body, f"sit:{uuid.uuid4().hex}")
    entry = CommandEntry(game_id, "sit", command_id, body, at=time.time())
    answer = await forward_keyed(gw, entry, key)
    if answer["status"] != "accepted":
        code = answer.get("code") or "bad_request"
        raise ApiError(status_for(code), code, answer.get("message") or code)
    seat = int(answer["seat"])
    token = await gw.tokens.issue(game_id, str(seat))
    return web.json_response(
        {"seat": seat, "token": token, "version": answer["version"], "head": answer["head"]},
        status=201,
    )


async def send_command(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    await gw.limits.at_address(request)
    await gw.load(game_id)
    role = await gw.viewer(request, game_id, required=True)
    seat = seat_of(role)
    if seat is None:
        raise ApiError(403, "forbidden", "the host token is not a seat; take a seat to play")
    await gw.limits.token(bearer_token(request))
    status, answer = await gw.submit(game_id, seat, await json_body(request))
    return web.json_response(answer, status=status, dumps=jsontext.dumps)
