"""The state every gateway handler shares: ``Gateway`` (one per app, under the typed key
``GATEWAY``), with the helpers the routes and the WebSocket pushes have in common."""

from __future__ import annotations

import time
import uuid
from typing import Any

import structlog
from aiohttp import web
from prometheus_client import Counter, Gauge, Histogram

from services.gateway.answers import Answers
from services.gateway.auth import Tokens
from services.gateway.errors import ApiError, error_body, status_for
from services.gateway.hub import Hub, Watcher, watcher_info
from services.gateway.idempotency import Idempotency
from services.gateway.lobby import Lobby
from services.gateway.params import bearer_token
from services.gateway.ratelimit import Clock, Limits
from shared.core.commands import SEAT_COMMANDS
from shared.core.events import event_from
from shared.core.views import event_json, view_json
from shared.infra import codec, jsontext
from shared.infra.autopipe import autopipe
from shared.infra.bus import Bus, CommandEntry, Requester
from shared.infra.client import RedisClient
from shared.infra.gamelog import GameLog, Loaded
from shared.infra.keys import Keys, check_game_id
from shared.infra.observability import service_registry
from shared.infra.settings import Settings
from shared.infra.store.redis import RedisEventStore

MAX_COMMAND_ID = 64


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
        # The log itself too: replays and exports read its raw records.
        store = self.store = RedisEventStore(client, settings.prefix)
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
        token = bearer_token(request)
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
            events = [event_for(s, watcher.viewer, finished) for s in stored]
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


def event_for(stored: Any, viewer: int | None, finished: bool) -> dict[str, Any]:
    """A stored event as ``viewer`` may see it, with its place in the chain."""
    shown = event_json(event_from(stored.type, stored.data), viewer, finished)
    return {"version": stored.version, "time": stored.time, "hash": stored.hash, **shown}


# Typed: ``request.app[GATEWAY]`` is a ``Gateway`` to mypy too.
GATEWAY = web.AppKey("gateway", Gateway)
