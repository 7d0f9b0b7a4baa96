"""The gateway: the only public entry point. It authenticates, shapes and forwards commands to
the referees, and serves each viewer exactly what that viewer may see. It never judges rules.

``make_app(client, settings)`` is the app factory; resources live in ``cleanup_ctx`` and every
WebSocket is closed with GOING_AWAY in ``on_shutdown`` (before the server waits for handlers).
"""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import structlog
from aiohttp import WSMsgType, web
from prometheus_client import Counter, Gauge, Histogram
from redis.exceptions import RedisError

from services.gateway import static_routes
from services.gateway.answers import Answers
from services.gateway.auth import HOST, Tokens
from services.gateway.errors import ApiError, error, error_body, status_for
from services.gateway.hub import Hub, Watcher, watcher_info
from services.gateway.idempotency import HEADER as IDEMPOTENCY_HEADER
from services.gateway.idempotency import Idempotency, request_key
from services.gateway.lobby import PAGE, STATUSES, Lobby
from services.gateway.openapi import openapi_document
from services.gateway.outbox import CLOSE_SECONDS, Outbox
from services.gateway.ratelimit import Clock, Limits, SocketLimits
from shared.core.commands import SEAT_COMMANDS
from shared.core.events import event_from
from shared.core.rulesets import RuleSetError, check_seats, rule_set
from shared.core.views import event_json, view_json
from shared.infra import codec, jsontext
from shared.infra.autopipe import autopipe
from shared.infra.bus import Bus, CommandEntry, Requester
from shared.infra.client import RedisClient
from shared.infra.gamelog import GameLog, Loaded
from shared.infra.keys import Keys, check_game_id
from shared.infra.observability import health_routes, service_registry
from shared.infra.settings import Settings
from shared.infra.store.redis import RedisEventStore

MAX_COMMAND_ID = 64
EVENTS_PAGE = 500


class GatewayMetrics:
    """The gateway's Prometheus metrics."""

    def __init__(self) -> None:
        self.registry = service_registry()
        self.requests = Counter(
            "gateway_requests_total", "HTTP requests", ["route", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "gateway_request_seconds",
            "HTTP request time",
            ["route"],
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10),
        )
        self.commands = Counter(
            "gateway_commands_total", "Commands forwarded", ["status"], registry=self.registry
        )
        self.sockets = Gauge(
            "gateway_websockets", "Open WebSocket connections", registry=self.registry
        )
        self.slow_sockets = Counter(
            "gateway_websockets_too_slow",
            "WebSockets closed for letting their queue of frames fill up",
            registry=self.registry,
        )


class Gateway:
    """The state every handler shares (one per app)."""

    def __init__(self, client: RedisClient, settings: Settings, clock: Clock | None = None) -> None:
        # Concurrent requests' Redis calls share pipelines (blocking reads go straight through).
        client = self.client = autopipe(client)
        self.settings = settings
        self.keys = Keys(settings.prefix)
        # Views may trust the feed for up to a second: a GET reads the store only when the feed
        # (or a command's answer) says the game has moved on since the cached state.
        store = RedisEventStore(client, settings.prefix)
        self.games = GameLog(store, settings.cache_size, trust_news=1.0)
        self.bus = Bus(client, self.keys, settings.partitions)
        self.requester = Requester(self.bus, f"gateway-{uuid.uuid4().hex[:12]}")
        self.tokens = Tokens(client, self.keys)
        self.lobby = Lobby(client, self.keys, self.games)
        # ``clock``: the limits' time (tests); None: Redis's own clock.
        self.limits = Limits(client, settings, clock)
        self.idempotency = Idempotency(client, self.keys, settings.idempotency_seconds)
        self.metrics = GatewayMetrics()
        # Hints, replays and exports: in worker processes, each within its budget, kept.
        self.answers = Answers(settings, self.metrics.registry)
        self.hub = Hub(self.bus, self.push, self.on_news)
        self.log = structlog.get_logger("gateway")

    # --- helpers -------------------------------------------------------------------------

    async def load(self, game_id: str) -> Loaded:
        """The game's current state, or 404."""
        try:
            check_game_id(game_id)
        except ValueError:
            raise ApiError(404, "not_found", f"no game {game_id!r}") from None
        loaded = await self.games.load(game_id, fresh=True)
        if loaded.version == 0:
            raise ApiError(404, "not_found", f"no game {game_id!r}")
        return loaded

    async def viewer(self, request: web.Request, game_id: str, required: bool) -> str | None:
        """The role of the request's bearer token: ``"host"``, a seat number as text, or None
        (no token). An unknown token is a 401; a missing one too where ``required``."""
        token = _token(request)
        if not token:
            if required:
                raise ApiError(401, "unauthorized", "send 'Authorization: Bearer <token>'")
            return None
        role = await self.tokens.role(game_id, token)
        if role is None:
            raise ApiError(401, "unauthorized", "this token is not a token of this game")
        return role

    def view(self, loaded: Loaded, seat: int | None) -> dict[str, Any]:
        """A viewer's view with the chain head (its receipt)."""
        return view_json(loaded.state, seat) | {"head": loaded.head}

    async def forward(self, entry: CommandEntry) -> dict[str, Any]:
        """Send a command to the referees and wait for the answer (504 on a timeout)."""
        try:
            answer = await self.requester.request(entry, self.settings.command_timeout)
        except TimeoutError:
            raise ApiError(
                504, "timeout", "the referee did not answer in time; retry with the same id"
            ) from None
        self.metrics.commands.labels(answer.get("status", "?")).inc()
        if isinstance(answer.get("version"), int):
            self.games.note(entry.game, answer["version"])
        return answer

    async def submit(self, game_id: str, seat: int, body: Any) -> tuple[int, dict[str, Any]]:
        """One seat command from the API or a WebSocket: (HTTP status, JSON answer)."""
        if not isinstance(body, dict):
            return 400, error_body("bad_json", "the command must be a JSON object")
        command_id = body.get("id")
        if not isinstance(command_id, str) or not 0 < len(command_id) <= MAX_COMMAND_ID:
            return 422, error_body(
                "bad_request", f"'id' must be a string of 1-{MAX_COMMAND_ID} characters"
            )
        kind = body.get("type")
        if kind not in SEAT_COMMANDS:
            allowed = ", ".join(sorted(SEAT_COMMANDS))
            return 422, error_body("bad_request", f"'type' is {kind!r}; allowed: {allowed}")
        expected = body.get("expected_version")
        if expected is not None and (not isinstance(expected, int) or isinstance(expected, bool)):
            return 422, error_body("bad_request", "'expected_version' must be an integer")
        payload = {k: v for k, v in body.items() if k != "id"}
        entry = CommandEntry(game_id, "seat", f"{seat}:{command_id}", payload, seat, at=time.time())
        answer = await self.forward(entry)
        receipt = {"version": answer["version"], "head": answer["head"]}
        if answer["status"] == "accepted":
            return 200, {"accepted": True, **receipt}
        code = answer.get("code") or "bad_request"
        return status_for(code), error_body(code, answer.get("message") or code, **receipt)

    async def push(self, watcher: Watcher, force: bool = False, since: int | None = None) -> None:
        """Queue a watcher its current view (and the events it missed) on its socket. ``force``:
        the view even if the watcher has seen this version (a socket's first view, a resync);
        ``since``: the version the client says it has (a ``sync``), its events start after it.

        Only the log is awaited, never the socket. A push that is not forced (the feed's)
        skips a watcher whose own push is under way: that one goes round again."""
        if not force and watcher.lock.locked():
            watcher.behind = True
            return
        async with watcher.lock:
            if since is not None:
                watcher.sent_version = since
            while not watcher.outbox.closing:
                watcher.behind = False
                await self._queue_view(watcher, force)
                if not watcher.behind:
                    return
                force = False

    async def _queue_view(self, watcher: Watcher, force: bool) -> None:
        loaded = await self.games.load(watcher.game_id, fresh=True)
        if loaded.version < watcher.sent_version:
            # The client has seen a newer version (``?after=``) than the cached state, which
            # the feed has not caught up with yet: that is news too, so read the log (else
            # the view goes back, and the events after it come again).
            self.games.note(watcher.game_id, watcher.sent_version)
            loaded = await self.games.load(watcher.game_id, fresh=True)
        if loaded.version <= watcher.sent_version and not force:
            return
        after = min(watcher.sent_version, loaded.version)
        outbox = watcher.outbox
        # The events too for a socket that asked for them (``?after=`` or a ``sync``); a
        # socket that did not gets its view alone (one log read per change, not per socket).
        if watcher.catch_up and after < loaded.version:
            finished = loaded.state.status == "finished"
            # Up to the view's version only: what was appended since comes with the next
            # push (read without a limit, it would come twice).
            stored = await self.games.store.read(
                watcher.game_id, after=after, limit=loaded.version - after
            )
            if outbox.closing:
                return
            events = [_event_for(s, watcher.viewer, finished) for s in stored]
            if not outbox.put(jsontext.dumps({"type": "events", "events": events})):
                return
        view = self.view(loaded, watcher.viewer)
        if outbox.put_view(jsontext.dumps({"type": "view", "view": view})):
            # Queued is as good as sent: the queue is delivered in order, or the socket is
            # closed and its client asks again from the last version it did get.
            watcher.sent_version = loaded.version

    def too_slow(self, watcher: Watcher) -> None:
        """A socket let its queue fill up (its outbox is closing it): stop pushing to it."""
        self.hub.remove(watcher)
        self.metrics.slow_sockets.inc()
        self.log.info(
            "closing a socket too slow to take its frames",
            **watcher_info(watcher),
            queued=watcher.outbox.limit,
        )

    async def on_news(
        self, game_id: str, version: int, types: list[str], records: list[bytes]
    ) -> None:
        """Note the game's new version (folding the events the news carries onto the cached
        state, when they follow it); keep the lobby in step with games starting and ending."""
        self.games.note(game_id, version)
        if records and self.games.cached(game_id):  # else nobody here watches it
            try:
                events = [codec.decode(r, self.games.store.upcasters) for r in records]
            except Exception as err:  # a record we cannot read: the store has it anyway
                self.log.warning("news records unreadable", game=game_id, error=str(err))
            else:
                self.games.extend(game_id, events)
        if "GameStarted" in types:
            await self.lobby.move(game_id, "playing")
        if "MatchEnded" in types:
            await self.lobby.move(game_id, "finished")

    async def ready(self) -> tuple[bool, str]:
        try:
            await self.client.ping()
        except Exception as err:
            return False, f"redis: {err}"
        return True, "ok"


def _event_for(stored: Any, viewer: int | None, finished: bool) -> dict[str, Any]:
    shown = event_json(event_from(stored.type, stored.data), viewer, finished)
    return {"version": stored.version, "time": stored.time, "hash": stored.hash, **shown}


GATEWAY = web.AppKey("gateway", Gateway)


def _token(request: web.Request) -> str:
    """The request's bearer token (header, else the ``token`` query parameter), or ""."""
    header = request.headers.get("Authorization", "")
    token = header[7:].strip() if header.lower().startswith("bearer ") else ""
    return token or request.query.get("token", "")


def _whole_number(text: str, name: str, maximum: int = 10**12) -> int:
    """A query parameter that must be a whole number (ASCII digits, at most ``maximum``)."""
    if not (text.isascii() and text.isdigit()) or int(text) > maximum:
        raise ApiError(422, "bad_request", f"{name} must be a whole number up to {maximum}")
    return int(text)


def _seat(role: str | None) -> int | None:
    return int(role) if role is not None and role != HOST else None


async def _json_body(request: web.Request) -> dict[str, Any]:
    raw = await request.read()
    try:
        body = jsontext.loads(raw or b"{}")
    except ValueError:
        raise ApiError(400, "bad_json", "the body is not valid JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "bad_json", "the body must be a JSON object")
    return body


# --- handlers ------------------------------------------------------------------------------


async def create_game(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    address = await gw.limits.at_address(request, gw.limits.create)
    key = request_key(request)
    body = await _json_body(request)
    unknown = set(body) - {"rules", "seats", "options", "seed"}
    if unknown:
        raise ApiError(422, "bad_request", f"unknown fields {sorted(unknown)}")
    try:
        rules = rule_set(body.get("rules"), body.get("options") or {})
        check_seats(rules, body.get("seats"))
    except RuleSetError as err:
        raise ApiError(422, "bad_options", str(err), option=err.option) from None
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
    # A retry with the same key names the same game (its create command is answered as it was).
    game_id = await gw.idempotency.create(address, key, payload, "g" + secrets.token_hex(8))
    entry = CommandEntry(game_id, "create", "create", payload, at=time.time())
    answer = await _forward_keyed(gw, entry, key)
    if answer["status"] != "accepted":
        code = answer.get("code") or "bad_request"
        raise ApiError(status_for(code), code, answer.get("message") or code)
    if not answer.get("duplicate"):
        await gw.lobby.move(game_id, "waiting", time.time())
    elif (await gw.load(game_id)).state.status in ("new", "waiting"):
        await gw.lobby.move(game_id, "waiting")  # the first try's answer may never have come
    host_token = await gw.tokens.issue(game_id, HOST)
    return web.json_response({"game_id": game_id, "host_token": host_token}, status=201)


async def _forward_keyed(gw: Gateway, entry: CommandEntry, key: str) -> dict[str, Any]:
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
    status = request.query.get("status", "waiting")
    if status not in STATUSES:
        raise ApiError(422, "bad_request", f"status must be one of {', '.join(STATUSES)}")
    cursor = _whole_number(request.query.get("cursor", "0"), "cursor", 10**9)
    limit = _whole_number(request.query.get("limit", str(PAGE)), "limit", 200)
    if limit == 0:
        raise ApiError(422, "bad_request", "limit must be 1-200")
    return web.json_response(await gw.lobby.page(status, cursor, limit))


async def get_game(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    loaded = await gw.load(game_id)
    role = await gw.viewer(request, game_id, required=False)
    return web.json_response(gw.view(loaded, _seat(role)), dumps=jsontext.dumps)


async def take_seat(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    await gw.limits.at_address(request, gw.limits.seat)
    key = request_key(request)
    await gw.load(game_id)
    body = await _json_body(request)
    unknown = set(body) - {"name", "seed"}
    if unknown:
        raise ApiError(422, "bad_request", f"unknown fields {sorted(unknown)}")
    # A retry with the same key sends the same command id: the referees answer it with the seat
    # the first try got (or give the seat now, if the first try never arrived).
    command_id = await gw.idempotency.sit(game_id, key, body, f"sit:{uuid.uuid4().hex}")
    entry = CommandEntry(game_id, "sit", command_id, body, at=time.time())
    answer = await _forward_keyed(gw, entry, key)
    if answer["status"] != "accepted":
        code = answer.get("code") or "bad_request"
        raise ApiError(status_for(code), code, answer.get("message") or code)
    seat = int(answer["seat"])
    token = await gw.tokens.issue(game_id, str(seat))
    return web.json_response(
        {"seat": seat, "token": token, "version": answer["version"], "head": answer["head"]},
        status=201,
    )


async def start_game(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    await gw.limits.at_address(request)
    await gw.load(game_id)
    role = await gw.viewer(request, game_id, required=True)
    if role != HOST:
        raise ApiError(403, "forbidden", "only the host token may start the game")
    await gw.limits.token(_token(request))
    answer = await gw.forward(CommandEntry(game_id, "start", "start", at=time.time()))
    if answer["status"] != "accepted":
        code = answer.get("code") or "bad_request"
        raise ApiError(status_for(code), code, answer.get("message") or code)
    await gw.lobby.move(game_id, "playing")
    return web.json_response(gw.view(await gw.load(game_id), None))


async def send_command(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    await gw.limits.at_address(request)
    await gw.load(game_id)
    role = await gw.viewer(request, game_id, required=True)
    seat = _seat(role)
    if seat is None:
        raise ApiError(403, "forbidden", "the host token is not a seat; take a seat to play")
    await gw.limits.token(_token(request))
    status, answer = await gw.submit(game_id, seat, await _json_body(request))
    return web.json_response(answer, status=status, dumps=jsontext.dumps)


async def list_events(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    await gw.limits.at_address(request, gw.limits.replay)
    loaded = await gw.load(game_id)
    seat = _seat(await gw.viewer(request, game_id, required=False))
    after = min(_whole_number(request.query.get("after", "0"), "after"), loaded.version)
    finished = loaded.state.status == "finished"
    stored = await gw.games.store.read(game_id, after=after, limit=EVENTS_PAGE)
    events = [_event_for(s, seat, finished) for s in stored]
    return web.json_response({"events": events, "version": loaded.version, "head": loaded.head})


async def websocket(request: web.Request) -> web.StreamResponse:
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    address = await gw.limits.at_address(request)  # a connection costs a load and a first push
    await gw.load(game_id)
    _check_origin(request, gw.settings)
    role = await gw.viewer(request, game_id, required=False)
    after_text = request.query.get("after")
    after = _whole_number(after_text, "after") if after_text is not None else 0
    ws = web.WebSocketResponse(
        heartbeat=20, max_msg_size=gw.settings.max_body_bytes, timeout=CLOSE_SECONDS
    )
    await ws.prepare(request)
    outbox = Outbox(ws, gw.settings.socket_queue, request.transport)
    watcher = Watcher(outbox, game_id, _seat(role), after)
    watcher.token = _token(request) if role is not None else ""
    watcher.catch_up = after_text is not None
    outbox.on_too_slow = lambda: gw.too_slow(watcher)
    outbox.start()
    limits = SocketLimits(gw.limits, address)
    gw.hub.add(watcher)
    gw.metrics.sockets.inc()
    try:
        await gw.push(watcher, force=True)
        async for message in ws:
            if outbox.closing:  # closed for being too slow (or the server is going away)
                break
            if message.type != WSMsgType.TEXT:
                continue
            await _on_ws_message(gw, watcher, message.data, limits)
    finally:
        gw.hub.remove(watcher)
        gw.metrics.sockets.dec()
        await outbox.finish()
    return ws


async def _on_ws_message(gw: Gateway, watcher: Watcher, text: str, limits: SocketLimits) -> None:
    """One message from a socket. Every answer goes through the socket's outbox: reading the
    socket never waits for its writing."""
    outbox = watcher.outbox
    try:
        body = jsontext.loads(text)
    except ValueError:
        outbox.put(_error_frame("bad_json", "not JSON"))
        return
    if not isinstance(body, dict):
        outbox.put(_error_frame("bad_json", "not a JSON object"))
        return
    if "token" in body and body.get("type") in (None, "auth"):
        if refused := await limits.sync():
            outbox.put(jsontext.dumps(refused.frame(body.get("id"))))
            return
        role = await gw.tokens.role(watcher.game_id, str(body["token"]))
        if role is None:
            outbox.put(_error_frame("unauthorized", "unknown token"))
            return
        watcher.viewer = _seat(role)
        watcher.token = str(body["token"])
        await gw.push(watcher, force=True, since=0)
        return
    if body.get("type") == "sync":
        if refused := await limits.sync():
            outbox.put(jsontext.dumps(refused.frame(body.get("id"))))
            return
        after = body.get("after", 0)
        ok = isinstance(after, int) and not isinstance(after, bool) and after >= 0
        watcher.catch_up = True
        await gw.push(watcher, force=True, since=after if ok else 0)
        return
    command_id = body.get("id")
    if watcher.viewer is None:
        answer = error_body("forbidden", "authenticate with a seat token to send commands")
        outbox.put(_answer(command_id, 403, answer))
        return
    if refused := await limits.command(watcher.token):  # the same limits as over HTTP
        outbox.put(jsontext.dumps(refused.frame(command_id)))
        return
    status, answer = await gw.submit(watcher.game_id, watcher.viewer, body)
    outbox.put(_answer(command_id, status, answer))


def _error_frame(code: str, message: str) -> str:
    """An error over a socket: the published error shape, typed ``"error"``."""
    return jsontext.dumps({"type": "error", **error_body(code, message)})


def _answer(command_id: Any, status: int, body: dict[str, Any]) -> str:
    """A command's answer over a socket: what the POST would have answered."""
    return jsontext.dumps({"type": "answer", "id": command_id, "status": status, "body": body})


def _check_origin(request: web.Request, settings: Settings) -> None:
    """Browsers send Origin on WebSockets: accept our own host (and nothing else), so a page
    elsewhere cannot drive a player's socket. Non-browser clients send no Origin."""
    origin = request.headers.get("Origin")
    if origin is None:
        return
    host = request.headers.get("Host", "")
    if origin.split("://", 1)[-1] != host:
        raise ApiError(403, "origin_not_allowed", f"origin {origin!r} is not this server")


async def openapi(request: web.Request) -> web.Response:
    return web.json_response(openapi_document())


# --- the app -------------------------------------------------------------------------------


@web.middleware
async def errors_and_metrics(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Every error as published JSON; every request counted and timed by route."""
    gw = request.app[GATEWAY]
    started = time.perf_counter()
    route = request.match_info.route.resource
    name = route.canonical if route is not None else "unmatched"
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    except ApiError as err:
        status = err.status_code
        raise
    except web.HTTPRequestEntityTooLarge:
        status = 413
        return error(413, "body_too_large", f"at most {gw.settings.max_body_bytes} bytes")
    except web.HTTPNotFound:
        status = 404
        return error(404, "not_found", f"no such path {request.path!r}")
    except web.HTTPMethodNotAllowed as err:
        status = 405
        return error(405, "bad_request", f"method {err.method} not allowed here")
    except web.HTTPException as err:
        # Raised by aiohttp itself (e.g. a plain GET on the WebSocket route): published shape.
        status = err.status_code
        if status < 400:
            raise
        code = {401: "unauthorized", 403: "forbidden", 404: "not_found"}.get(status, "bad_request")
        return error(status, code, err.text or err.reason)
    except Exception:
        status = 500
        gw.log.exception("request failed", path=request.path, method=request.method)
        return error(500, "internal", "the server failed to answer; retrying may help")
    finally:
        gw.metrics.requests.labels(name, str(status)).inc()
        gw.metrics.latency.labels(name).observe(time.perf_counter() - started)


async def _lifecycle(app: web.Application) -> AsyncIterator[None]:
    gw = app[GATEWAY]
    await gw.requester.start()
    await gw.hub.start()
    await gw.answers.start()
    yield
    await gw.answers.stop()  # every worker process ended and reaped
    await gw.hub.stop()
    await gw.requester.close()


async def _going_away(app: web.Application) -> None:
    await app[GATEWAY].hub.close_sockets()


def make_app(
    client: RedisClient, settings: Settings, *, clock: Clock | None = None
) -> web.Application:
    """The gateway's aiohttp application over ``client``; ``clock``: the rate limits' time
    (seconds; tests move it), else Redis's own."""
    app = web.Application(client_max_size=settings.max_body_bytes, middlewares=[errors_and_metrics])
    gateway = Gateway(client, settings, clock)
    app[GATEWAY] = gateway
    app.cleanup_ctx.append(_lifecycle)
    app.on_shutdown.append(_going_away)
    app.router.add_post("/api/games", create_game)
    app.router.add_get("/api/games", list_games)
    app.router.add_get("/api/games/{game_id}", get_game)
    app.router.add_post("/api/games/{game_id}/seats", take_seat)
    app.router.add_post("/api/games/{game_id}/start", start_game)
    app.router.add_post("/api/games/{game_id}/commands", send_command)
    app.router.add_get("/api/games/{game_id}/events", list_events)
    app.router.add_get("/api/games/{game_id}/ws", websocket)
    from services.gateway import replay_routes  # here: it reads GATEWAY from this module

    replay_routes.add_routes(app)
    from services.gateway import hint_routes  # the solver's hint for a seat, from its own view

    hint_routes.add_routes(app)
    app.router.add_get("/openapi.json", openapi)
    static_routes.add_routes(app)  # the web client at / (and /web/, /api/rules)
    health_routes(app, gateway.metrics.registry, gateway.ready)
    return app
