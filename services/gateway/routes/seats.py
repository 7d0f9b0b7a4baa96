"""A seat's routes: take a seat, send a command from it."""

from __future__ import annotations

import time
import uuid

from aiohttp import web

from services.gateway.auth import HOST
from services.gateway.bodies import Seated, Sit
from services.gateway.errors import ApiError, status_for
from services.gateway.idempotency import request_key
from services.gateway.params import bearer_token, json_body, seat_of
from services.gateway.routes.accounts import ACCOUNTS, signed_in
from services.gateway.routes.games import forward_keyed
from services.gateway.state import GATEWAY
from shared.core.commands import CommandError, sit_command
from shared.infra import jsontext
from shared.infra.protocol import CommandEntry


async def take_seat(request: web.Request) -> web.Response:
    """Take the next free seat; with ``bot`` (the host's token only), give it to a bot. With a
    session, the seat is the account's: its id goes in the event, its name is shown."""
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    await gw.limits.at_address(request, gw.limits.seat)
    key = request_key(request)
    loaded = await gw.load(game_id)
    body = await json_body(request)
    unknown = body.keys() - Sit.__annotations__
    if unknown:
        raise ApiError(422, "bad_request", f"unknown fields {sorted(unknown)}")
    player = await signed_in(request) if "bot" not in body else None
    if player is not None:  # the account's seat, under the account's name
        body = {**body, "name": player.name, "player": player.id}
    try:
        sit = sit_command(body)
    except CommandError as err:
        raise ApiError(422, "bad_request", str(err), option=err.field) from None
    if loaded.state.tournament:
        raise ApiError(
            409,
            "seat_reserved",
            f"this game is a table of tournament {loaded.state.tournament}: its seats are the "
            f"tournament's entrants' (register at /api/tournaments/{loaded.state.tournament})",
        )
    if sit.bot is not None:
        if await gw.viewer(request, game_id, required=True) != HOST:
            raise ApiError(403, "forbidden", "only the host token may give a seat to a bot")
        return await _seat_bot(request, game_id, body, sit.bot, key)
    if loaded.state.rematch_of:
        raise ApiError(
            409,
            "seat_reserved",
            f"this game is the rematch of {loaded.state.rematch_of}: its players join it from "
            f"there (POST /api/games/{loaded.state.rematch_of}/rematch/seat)",
        )
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
    if player is not None:
        await request.app[ACCOUNTS].note_seat(player.id, game_id, seat)
    seated: Seated = {
        "seat": seat,
        "token": token,
        "version": answer["version"],
        "head": answer["head"],
    }
    return web.json_response(seated, status=201)


async def _seat_bot(
    request: web.Request, game_id: str, body: dict[str, object], bot: str, key: str
) -> web.Response:
    """The host gives the next free seat to ``bot``: no token is issued (the bots service plays
    the seat through the command streams)."""
    gw = request.app[GATEWAY]
    await gw.limits.token(bearer_token(request))
    command_id = await gw.idempotency.sit(game_id, key, body, f"sit:{uuid.uuid4().hex}")
    entry = CommandEntry(game_id, "sit", command_id, dict(body), at=time.time())
    answer = await forward_keyed(gw, entry, key)
    if answer["status"] != "accepted":
        code = answer.get("code") or "bad_request"
        raise ApiError(status_for(code), code, answer.get("message") or code)
    seated: Seated = {
        "seat": int(answer["seat"]),
        "bot": bot,
        "version": answer["version"],
        "head": answer["head"],
    }
    return web.json_response(seated, status=201)


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
