"""The routes that end games and begin new ones: leave a waiting game, cancel it (the host),
offer a rematch of a finished game and take one's seat in it. Resigning and returning are seat
commands (``POST /commands`` with ``type`` ``resign`` or ``return``)."""

from __future__ import annotations

import contextlib
import secrets
import time
import uuid
from typing import Any

from aiohttp import web

from services.gateway.auth import HOST
from services.gateway.bodies import Leave, Rematch, RematchSeat
from services.gateway.errors import ApiError, status_for
from services.gateway.params import bearer_token, json_body, seat_of
from services.gateway.routes.accounts import ACCOUNTS, seated_players
from services.gateway.state import GATEWAY, Gateway
from shared.core.commands import SERVICE_COMMAND_PREFIX as SERVICE
from shared.core.state import GameState
from shared.infra import jsontext
from shared.infra.protocol import CommandEntry


def _refused(answer: dict[str, Any]) -> ApiError:
    code = answer.get("code") or "bad_request"
    return ApiError(status_for(code), code, answer.get("message") or code)


async def leave_game(request: web.Request) -> web.Response:
    """A player gives up its seat of a waiting game (its tokens stop working); the host may free
    a bot's seat with ``{"seat": n}`` (Decision 15)."""
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    await gw.limits.at_address(request)
    loaded = await gw.load(game_id)
    role = await gw.viewer(request, game_id, required=True)
    body = await json_body(request)
    unknown = body.keys() - Leave.__annotations__
    if unknown:
        raise ApiError(422, "bad_request", f"unknown fields {sorted(unknown)}")
    seat = seat_of(role)
    if role == HOST:
        asked = body.get("seat")
        if isinstance(asked, bool) or not isinstance(asked, int):
            raise ApiError(422, "bad_request", "'seat' must be the number of a bot's seat")
        if loaded.state.bot_at(asked) is None:
            raise ApiError(403, "forbidden", f"seat {asked} is not a bot's: its player leaves")
        seat = asked
    elif "seat" in body and body["seat"] != seat:
        raise ApiError(403, "forbidden", "a seat's token leaves its own seat only")
    assert seat is not None
    await gw.limits.token(bearer_token(request))
    entry = CommandEntry(
        game_id, "seat", f"{SERVICE}leave:{uuid.uuid4().hex}", {"type": "leave"}, seat
    )
    answer = await gw.forward(entry)
    if answer["status"] != "accepted":
        raise _refused(answer)
    await gw.tokens.revoke(game_id, str(seat))
    return web.json_response(gw.view(await gw.load(game_id), None), dumps=jsontext.dumps)


async def cancel_game(request: web.Request) -> web.Response:
    """The host cancels a waiting game (Decision 18); the lobby no longer lists it."""
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    await gw.limits.at_address(request)
    await gw.load(game_id)
    if await gw.viewer(request, game_id, required=True) != HOST:
        raise ApiError(403, "forbidden", "only the host token may cancel the game")
    await gw.limits.token(bearer_token(request))
    answer = await gw.forward(CommandEntry(game_id, "cancel", "cancel", at=time.time()))
    if answer["status"] != "accepted":
        raise _refused(answer)
    await gw.lobby.remove(game_id)
    return web.json_response(gw.view(await gw.load(game_id), None), dumps=jsontext.dumps)


def rematch_seat(old: GameState, seat: int) -> int:
    """Where old seat ``seat`` sits in the rematch: every seat moves one on (Decision 19)."""
    return (seat - 1) % old.seats


async def offer_rematch(request: web.Request) -> web.Response:
    """A seat of a finished game offers a rematch (Decision 19): the game is made (same rules
    and options, seats rotated, unlisted), linked from the finished one, its bots seated, and
    the offering player seated in it. Offered again, the same rematch is joined."""
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    await gw.limits.at_address(request, gw.limits.create)
    loaded = await gw.load(game_id)
    seat = seat_of(await gw.viewer(request, game_id, required=True))
    if seat is None:
        raise ApiError(403, "forbidden", "a seat of the finished game offers its rematch")
    await _no_fields(request)
    old = loaded.state
    if old.status != "finished":
        raise ApiError(409, "game_not_over", "a rematch can only be offered once the game is over")
    if not old.rematch:
        if await gw.store.forgotten(game_id):
            # Refused before the rematch is made: made, it would wait for a link that never
            # comes, its seats reserved, until it expired.
            raise _closed()
        await _make_rematch(gw, game_id, old, seat)
    return await _join(request, game_id, seat)


def _closed() -> ApiError:
    return ApiError(
        409,
        "rematch_closed",
        "this game is archived and takes no more moves, so no rematch can be offered; "
        "start a new game instead",
    )


async def join_rematch(request: web.Request) -> web.Response:
    """A player of a finished game takes its reserved seat in the rematch, with its old seat's
    token; the rematch starts once every seat is taken."""
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    await gw.limits.at_address(request, gw.limits.seat)
    await gw.load(game_id)
    seat = seat_of(await gw.viewer(request, game_id, required=True))
    if seat is None:
        raise ApiError(403, "forbidden", "a seat of the finished game joins its rematch")
    await _no_fields(request)
    return await _join(request, game_id, seat)


async def _no_fields(request: web.Request) -> None:
    body = await json_body(request)
    unknown = body.keys() - Rematch.__annotations__
    if unknown:
        raise ApiError(422, "bad_request", f"unknown fields {sorted(unknown)}")


async def _make_rematch(gw: Gateway, game_id: str, old: GameState, seat: int) -> None:
    new_id = "g" + secrets.token_hex(8)
    options = old.rules.options()
    payload = {"rules": old.rules.name, "seats": old.seats, "options": options}
    create = CommandEntry(new_id, "create", "create", {**payload, "rematch_of": game_id})
    answer = await gw.forward(create)
    if answer["status"] != "accepted":
        raise _refused(answer)
    link = CommandEntry(
        game_id,
        "seat",
        f"{SERVICE}rematch",
        {"type": "rematch", "game_id": new_id},
        seat,
        at=time.time(),
    )
    answer = await gw.forward(link)
    if answer["status"] != "accepted" and answer.get("code") != "rematch_offered":
        # Not linked (the old game left Redis meanwhile, say): the new game is nobody's
        # rematch. (After a timeout the link may still be applied: that game is kept.)
        with contextlib.suppress(ApiError):
            await gw.forward(CommandEntry(new_id, "cancel", "cancel", at=time.time()))
        if answer.get("code") == "game_archived" or await gw.store.forgotten(game_id):
            raise _closed()
        raise _refused(answer)
    linked = (await gw.games.load(game_id, fresh=True)).state.rematch
    if linked != new_id:
        # Another seat's offer was linked first: that game is the rematch; this one is cancelled.
        await gw.forward(CommandEntry(new_id, "cancel", "cancel", at=time.time()))
        return
    for old_seat in range(old.seats):
        bot = old.bot_at(old_seat) if not old.away[old_seat] else None
        if bot is not None:
            body = {"name": old.names[old_seat], "bot": bot, "seat": rematch_seat(old, old_seat)}
            sit = CommandEntry(new_id, "sit", f"rematch:{old_seat}", body, at=time.time())
            answer = await gw.forward(sit)
            if answer["status"] != "accepted":
                raise _refused(answer)


async def _join(request: web.Request, game_id: str, seat: int) -> web.Response:
    gw = request.app[GATEWAY]
    old = (await gw.games.load(game_id, fresh=True)).state
    new_id = old.rematch
    if not new_id:
        raise ApiError(409, "game_not_over", "no rematch of this game has been offered")
    target = rematch_seat(old, seat)
    body: dict[str, object] = {"name": old.names[seat], "seat": target}
    player = (await seated_players(gw, game_id)).get(seat, "")
    if player:  # an account's seat: its seat in the rematch is the account's too
        body["player"] = player
    sit = CommandEntry(new_id, "sit", f"rematch:{seat}", body, at=time.time())
    answer = await gw.forward(sit)
    if answer["status"] != "accepted":
        raise _refused(answer)
    token = await gw.tokens.issue(new_id, str(target))
    if player:
        await request.app[ACCOUNTS].note_seat(player, new_id, target)
    state = (await gw.games.load(new_id, fresh=True)).state
    if state.status == "waiting" and state.seated() == state.seats:
        started = await gw.forward(CommandEntry(new_id, "start", "start", at=time.time()))
        if started["status"] != "accepted" and started.get("code") != "game_started":
            raise _refused(started)
        await gw.lobby.move(new_id, "playing", time.time())
    joined: RematchSeat = {"game_id": new_id, "seat": target, "token": token}
    return web.json_response(joined, status=201)
