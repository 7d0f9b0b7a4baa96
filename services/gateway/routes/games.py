"""The lobby's routes: create a game, list games, view one, start it."""

from __future__ import annotations

import secrets
import time
from typing import Any

from aiohttp import web
from redis.exceptions import RedisError

from services.gateway.auth import HOST
from services.gateway.bodies import Created, CreateGame
from services.gateway.errors import ApiError, status_for
from services.gateway.idempotency import HEADER as IDEMPOTENCY_HEADER
from services.gateway.idempotency import request_key
from services.gateway.lobby import MAX_CURSOR, MAX_PAGE, PAGE, STATUSES
from services.gateway.params import bearer_token, json_body, seat_of, whole_number
from services.gateway.state import GATEWAY, Gateway
from shared.core.botnames import BOT_NAMES, BOTS_ALLOWED
from shared.core.rulesets import RuleSetError, check_seats, rule_set
from shared.infra import jsontext
from shared.infra.protocol import CommandEntry


async def create_game(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    address = await gw.limits.at_address(request, gw.limits.create)
    key = request_key(request)
    body = await json_body(request)
    unknown = body.keys() - CreateGame.__annotations__
    if unknown:
        raise ApiError(422, "bad_request", f"unknown fields {sorted(unknown)}")
    try:
        rules = rule_set(body.get("rules"), body.get("options") or {})
        check_seats(rules, body.get("seats"))
    except RuleSetError as err:
        raise ApiError(422, "bad_options", str(err), option=err.option) from None
    bots = body.get("bots") or []
    if not isinstance(bots, list) or len(bots) >= body["seats"]:
        raise ApiError(
            422, "bad_request", "'bots' must be a list of bot names, fewer than the seats"
        )
    for bot in bots:
        if bot not in BOT_NAMES:
            raise ApiError(
                422, "bad_request", f"'bots' holds {bot!r}; allowed: {BOTS_ALLOWED}", option="bots"
            )
    seed = body.get("seed")
    if seed is not None:
        if not gw.settings.allow_seeded_games:
            raise ApiError(422, "bad_request", "'seed' is refused: this server plays fair deals")
        if not isinstance(seed, str) or not seed or len(seed) > 128:
            raise ApiError(422, "bad_request", "'seed' must be hex, at most 128 characters")
        try:
            bytes.fromhex(seed)
        except ValueError:
            raise ApiError(422, "bad_request", "'seed' must be hex") from None
    payload = {"rules": body["rules"], "seats": body["seats"], "options": body.get("options") or {}}
    if seed is not None:
        payload["seed"] = seed
    if bots:
        payload["bots"] = bots  # (a retry with other bots is another request)
    # A retry with the same key names the same game (its create command is answered as it was).
    fresh = "g" + secrets.token_hex(8)
    game_id = await gw.idempotency.create(address, key, payload, fresh)
    if game_id != fresh and await gw.store.forgotten(game_id):
        # Its log, with the command ids it answered, has left Redis: sent again, the create
        # would make another game under an archived game's id.
        raise ApiError(
            409, "game_archived", f"game {game_id} was made, played to its end and archived"
        )
    entry = CommandEntry(game_id, "create", "create", payload, at=time.time())
    answer = await forward_keyed(gw, entry, key)
    if answer["status"] != "accepted":
        code = answer.get("code") or "bad_request"
        raise ApiError(status_for(code), code, answer.get("message") or code)
    if not answer.get("duplicate"):
        await gw.lobby.move(game_id, "waiting", time.time())
    elif (await gw.load(game_id)).state.status in ("new", "waiting"):
        await gw.lobby.move(game_id, "waiting")  # the first try's answer may never have come
    for number, bot in enumerate(bots):
        # A retry of the create seats the same bots once: each sit's command id is its own.
        sit = CommandEntry(game_id, "sit", f"sit:bot:{number}", {"bot": bot}, at=time.time())
        answer = await gw.forward(sit)
        if answer["status"] != "accepted":
            code = answer.get("code") or "bad_request"
            raise ApiError(status_for(code), code, answer.get("message") or code)
    host_token = await gw.tokens.issue(game_id, HOST)
    created: Created = {"game_id": game_id, "host_token": host_token}
    return web.json_response(created, status=201)


async def forward_keyed(gw: Gateway, entry: CommandEntry, key: str) -> dict[str, Any]:
    """``forward`` for a create or a sit: an answer that does not come (a timeout, Redis away)
    names the request's idempotency key, so that the client can ask again for the same game or
    seat (which the command may still get) instead of making another."""
    message = f"send the request again with the header '{IDEMPOTENCY_HEADER}: {key}'"
    try:
        return await gw.forward(entry)
    except ApiError as err:
        if err.status_code != 504:
            raise
        raise ApiError(
            504, "timeout", f"the referee did not answer in time; {message}", idempotency_key=key
        ) from None
    except (RedisError, ConnectionError):
        gw.log.exception("forwarding failed", game=entry.game, kind=entry.kind)
        raise ApiError(
            500,
            "internal",
            f"the command may or may not have been sent; {message}",
            idempotency_key=key,
        ) from None


async def list_games(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    gw.limits.read(request)
    status = request.query.get("status", "waiting")
    if status not in STATUSES:
        raise ApiError(422, "bad_request", f"status must be one of {', '.join(STATUSES)}")
    cursor = whole_number(request.query.get("cursor", "0"), "cursor", MAX_CURSOR)
    limit = whole_number(request.query.get("limit", str(PAGE)), "limit", MAX_PAGE, minimum=1)
    return web.json_response(await gw.lobby.page(status, cursor, limit))


async def get_game(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    gw.limits.read(request)
    loaded = await gw.load(game_id)
    role = await gw.viewer(request, game_id, required=False)
    return web.json_response(gw.view(loaded, seat_of(role)), dumps=jsontext.dumps)


async def start_game(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    await gw.limits.at_address(request)
    await gw.load(game_id)
    role = await gw.viewer(request, game_id, required=True)
    if role != HOST:
        raise ApiError(403, "forbidden", "only the host token may start the game")
    await gw.limits.token(bearer_token(request))
    answer = await gw.forward(CommandEntry(game_id, "start", "start", at=time.time()))
    if answer["status"] != "accepted":
        code = answer.get("code") or "bad_request"
        raise ApiError(status_for(code), code, answer.get("message") or code)
    await gw.lobby.move(game_id, "playing")
    return web.json_response(gw.view(await gw.load(game_id), None))
