"""Accounts' routes: register, log in and out, the owner's sessions, games and deletion.

A session is sent as a bearer token (the API) or the ``rummy_session`` cookie (the web client:
HttpOnly, so no script reads it, and SameSite=Lax, so another site's form posts without it).
Registration and login pass two limits, per client address and per account name, so guessing a
password is slow from one address and from many.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from services.gateway.accounts import (
    SESSION_PREFIX,
    SESSION_SECONDS,
    AccountError,
    Accounts,
    Player,
    fold,
)
from services.gateway.auth import token_hash
from services.gateway.bodies import (
    AccountSession,
    MyGame,
    MyGames,
    SeatToken,
    SessionInfo,
    SessionList,
)
from services.gateway.errors import ApiError
from services.gateway.params import bearer_token, json_body
from services.gateway.ratelimit import Limit
from services.gateway.state import GATEWAY, Gateway

ACCOUNTS = web.AppKey("accounts", Accounts)
COOKIE = "rummy_session"
LOGINS = Limit.per_minute("login", "logins and registrations from this address", 20)
# A name's limit: 5 at once, then one every 12 s (300 an hour), wherever they come from.
NAME_GUESSES = Limit("login_name", "login attempts for this account name", 5 / 60, 5)
FIELDS = frozenset({"name", "password"})
MY_GAMES = 100  # the newest seats GET /api/me/games lists (each is a game to load)


def attach(app: web.Application) -> None:
    """Keep the deployment's accounts on ``app`` (beside the gateway's state, whose client and
    prefix they share)."""
    gw = app[GATEWAY]
    app[ACCOUNTS] = Accounts(gw.client, gw.settings.prefix)


def session_token(request: web.Request) -> str:
    """The request's session token: a bearer token that is one, else the cookie, else ""."""
    bearer = bearer_token(request)
    if bearer.startswith(SESSION_PREFIX):
        return bearer
    return request.cookies.get(COOKIE, "")


async def signed_in(request: web.Request) -> Player | None:
    """The account the request's session belongs to, or None (a guest)."""
    token = session_token(request)
    return await request.app[ACCOUNTS].session_player(token) if token else None


async def _required(request: web.Request) -> Player:
    player = await signed_in(request)
    if player is None:
        raise ApiError(401, "unauthorized", "log in first: no live session in the request")
    return player


async def _credentials(request: web.Request) -> dict[str, Any]:
    body = await json_body(request)
    unknown = body.keys() - FIELDS
    if unknown:
        raise ApiError(
            422, "bad_request", f"unknown fields {sorted(unknown)}; allowed: name, password"
        )
    for field in sorted(FIELDS):
        if field not in body:
            raise ApiError(422, "bad_request", f"{field} is required", option=field)
    return body


async def _limited(request: web.Request, name: Any) -> None:
    gw = request.app[GATEWAY]
    await gw.limits.at_address(request, LOGINS)
    if isinstance(name, str):
        # The name as a hash: any text a client sends is a safe key part, and a long one costs
        # no more than a short one.
        await gw.limits.check(NAME_GUESSES, token_hash(fold(name))[:32])


def _refused(err: AccountError) -> ApiError:
    status = {"name_taken": 409, "bad_credentials": 401}.get(err.code, 422)
    return ApiError(status, err.code, str(err), option=err.field)


def _with_session(request: web.Request, player: Player, token: str, status: int) -> web.Response:
    doc: AccountSession = {"player": {"id": player.id, "name": player.name}, "token": token}
    response = web.json_response(doc, status=status)
    response.set_cookie(
        COOKIE,
        token,
        httponly=True,
        samesite="Lax",
        secure=request.secure,
        path="/",
        max_age=SESSION_SECONDS,
    )
    return response


async def register(request: web.Request) -> web.Response:
    """Make an account and log it in."""
    body = await _credentials(request)
    await _limited(request, body["name"])
    accounts = request.app[ACCOUNTS]
    try:
        player = await accounts.register(body["name"], body["password"])
    except AccountError as err:
        raise _refused(err) from None
    token = await accounts.open_session(player, request.headers.get("User-Agent", ""))
    return _with_session(request, player, token, 201)


async def log_in(request: web.Request) -> web.Response:
    """A new session for a name and its password."""
    body = await _credentials(request)
    await _limited(request, body["name"])
    accounts = request.app[ACCOUNTS]
    try:
        player = await accounts.authenticate(body["name"], body["password"])
    except AccountError as err:
        raise _refused(err) from None
    token = await accounts.open_session(player, request.headers.get("User-Agent", ""))
    return _with_session(request, player, token, 201)


async def log_out(request: web.Request) -> web.Response:
    """End the request's own session (and clear the cookie)."""
    await _required(request)
    await request.app[ACCOUNTS].close_session(session_token(request))
    response = web.Response(status=204)
    response.del_cookie(COOKIE, path="/")
    return response


async def me(request: web.Request) -> web.Response:
    """Who the session belongs to."""
    player = await _required(request)
    return web.json_response({"id": player.id, "name": player.name})


async def list_sessions(request: web.Request) -> web.Response:
    """The owner's live sessions (never their tokens); ``current``: the one asking."""
    player = await _required(request)
    current = token_hash(session_token(request))[:16]
    held = await request.app[ACCOUNTS].sessions(player.id)
    doc: SessionList = {
        "sessions": [
            SessionInfo(
                id=s.id,
                created=s.created,
                expires=s.expires,
                label=s.label,
                current=s.id == current,
            )
            for s in held
        ]
    }
    return web.json_response(doc)


async def revoke_session(request: web.Request) -> web.Response:
    """End one of the owner's sessions (another device's, say)."""
    player = await _required(request)
    session_id = request.match_info["session_id"]
    if not await request.app[ACCOUNTS].revoke(player.id, session_id):
        raise ApiError(404, "not_found", f"no live session {session_id!r} of yours")
    return web.Response(status=204)


async def delete_account(request: web.Request) -> web.Response:
    """Delete the account (its password again in the body): its games stay, under a
    pseudonym; its sessions end."""
    player = await _required(request)
    body = await json_body(request)
    unknown = body.keys() - {"password"}
    if unknown:
        raise ApiError(422, "bad_request", f"unknown fields {sorted(unknown)}; allowed: password")
    if "password" not in body:
        raise ApiError(422, "bad_request", "password is required", option="password")
    await _limited(request, player.name)
    try:
        await request.app[ACCOUNTS].delete(player, body["password"])
    except AccountError as err:
        raise _refused(err) from None
    response = web.Response(status=204)
    response.del_cookie(COOKIE, path="/")
    return response


async def my_games(request: web.Request) -> web.Response:
    """The seats the account took (the newest ``MY_GAMES``), with each game's status: to resume
    any of them from any device (``POST /api/me/games/{game_id}/token``)."""
    player = await _required(request)
    gw = request.app[GATEWAY]
    games: list[MyGame] = []
    for game_id, seat, taken in (await request.app[ACCOUNTS].seats(player.id))[:MY_GAMES]:
        loaded = await gw.games.load(game_id)
        state = loaded.state
        status = state.status if loaded.version else "archived"
        games.append(
            MyGame(
                game_id=game_id,
                seat=seat,
                status=status,
                rules=state.rules.name if loaded.version else "",
                taken=taken,
            )
        )
    doc: MyGames = {"games": games}
    return web.json_response(doc)


async def seat_token(request: web.Request) -> web.Response:
    """A fresh token for the account's own seat of a game (another device resumes with it)."""
    player = await _required(request)
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    await gw.limits.at_address(request, gw.limits.seat)
    held = [s for g, s, _ in await request.app[ACCOUNTS].seats(player.id) if g == game_id]
    nothing = ApiError(404, "not_found", f"you hold no seat of game {game_id!r}")
    try:
        loaded = await gw.load(game_id)
    except ApiError:
        raise nothing from None
    players = _seat_players(loaded.state.names, await seated_players(gw, game_id))
    # Else a seat someone else gave the account (a tournament's table, seated by the tournament
    # service): the game's log says whose it is.
    held = held or [seat for seat, who in sorted(players.items()) if who == player.id]
    if not held:
        raise nothing
    seat = held[0]
    if players.get(seat) != player.id:
        raise ApiError(403, "forbidden", f"seat {seat} of {game_id!r} is not yours now")
    token = await gw.tokens.issue(game_id, str(seat))
    doc: SeatToken = {"game_id": game_id, "seat": seat, "token": token}
    return web.json_response(doc, status=201)


SEATINGS = frozenset({"PlayerSeated"})


async def seated_players(gw: Gateway, game_id: str) -> dict[int, str]:
    """Which account took each seat, by the game's log (a seat given up and taken again counts
    its last taker)."""
    held: dict[int, str] = {}
    # (only the seatings decoded: a request's cost is not a decode of every turn of the game)
    for stored in await gw.store.read_types(game_id, SEATINGS):
        held[int(stored.data["seat"])] = str(stored.data.get("player", ""))
    return held


def _seat_players(names: tuple[str, ...], held: dict[int, str]) -> dict[int, str]:
    return {seat: player for seat, player in held.items() if seat < len(names) and names[seat]}
