"""The state every gateway handler shares: ``Gateway`` (one per app, under the typed key
``GATEWAY``), with the helpers the routes and the WebSocket pushes have in common."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import OrderedDict
from collections.abc import Coroutine
from typing import Any

import structlog
from aiohttp import web
from prometheus_client import Counter, Gauge, Histogram

from services.gateway.answers import Answers
from services.gateway.auth import Tokens
from services.gateway.bodies import MAX_COMMAND_ID, Accepted, View
from services.gateway.errors import ApiError, error_body, error_frame, status_for
from services.gateway.frames import Frames
from services.gateway.hub import Hub, Watcher, watcher_info
from services.gateway.idempotency import Idempotency
from services.gateway.lobby import Lobby
from services.gateway.params import bearer_token
from services.gateway.ratelimit import Clock, Limits
from services.gateway.tarpit import Tarpit
from shared.core.commands import SEAT_COMMANDS
from shared.core.events import event_from
from shared.core.views import event_json, seat_part, view_json
from shared.infra.autopipe import autopipe
from shared.infra.bus import Bus, Requester
from shared.infra.client import RedisClient
from shared.infra.gamelog import GameLog, Loaded
from shared.infra.keys import Keys, check_game_id
from shared.infra.observability import service_registry
from shared.infra.protocol import CommandEntry, News
from shared.infra.readiness import Readiness
from shared.infra.settings import Settings
from shared.infra.store.redis import RedisEventStore
from shared.infra.tournaments import TournamentDesk

CATCH_UP_PAGE = 100  # events in one frame of a socket's catch-up
ANSWER_WAIT = 0.5  # seconds an answer waits for the news of its change before reading the log
VIEW_FRAME = '{"type":"view","view":'  # how a view frame's text begins


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
        self.frames = Frames(store, event_for)  # what sockets are sent, encoded once per viewer
        self._pending: set[asyncio.Task[None]] = set()  # answers' pushes under way
        self.bus = Bus(client, self.keys, settings.partitions)
        name = f"gateway-{uuid.uuid4().hex[:12]}"
        self.requester = Requester(self.bus, name, on_lost=self.redis_lost)
        self.tokens = Tokens(client, self.keys)
        # Tournaments: commands to the tournament service, and their logs read back.
        self.tournaments = TournamentDesk(client, self.keys, name, settings.command_timeout)
        # Tournament views as sent, by (tournament, version, director's name): a page polls
        # its tournament every few seconds, and a long one's view is costly to build.
        self.tournament_views: OrderedDict[tuple[str, int, str], bytes] = OrderedDict()
        self.lobby = Lobby(client, self.keys, self.games)
        # ``clock``: the limits' time (tests); None: Redis's own clock.
        self.limits = Limits(client, settings, clock)
        self.tarpit = Tarpit(settings.refusal_delay, settings.refusals_held)
        self.idempotency = Idempotency(client, self.keys, settings.idempotency_seconds)
        self.metrics = GatewayMetrics()
        # Hints, replays and exports: in worker processes, each within its budget, kept.
        self.answers = Answers(settings, self.metrics.registry)
        self.hub = Hub(self.bus, self.push, self.on_news)
        self.sockets: dict[str, int] = {}  # open WebSockets by client address
        self._loading: dict[str, asyncio.Future[Loaded]] = {}  # loads under way, by game
        self.log = structlog.get_logger("gateway")
        # Readiness as last known: a ``heartbeat`` every half second (the app's lifecycle runs
        # it), never a call in the probe's own request.
        self.readiness = Readiness()

    # --- helpers -------------------------------------------------------------------------

    async def load(self, game_id: str) -> Loaded:
        """The game's current state, or 404."""
        try:
            check_game_id(game_id)
        except ValueError:
            raise ApiError(404, "not_found", f"no game {game_id!r}") from None
        loading = self._loading.get(game_id)
        if loading is None:
            # One load at a time per game: concurrent requests for a game not cached (a burst of
            # replays of a long one) share it, instead of each reading and folding the whole
            # log on the event loop.
            loading = asyncio.ensure_future(self.games.load(game_id, fresh=True))
            self._loading[game_id] = loading
            loading.add_done_callback(lambda _: self._loading.pop(game_id, None))
            loading.add_done_callback(lambda done: done.cancelled() or done.exception())
        loaded = await asyncio.shield(loading)
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

    def view(self, loaded: Loaded, seat: int | None, own_keys: bool = True) -> View:
        """A viewer's view with the chain head (its receipt); ``own_keys``: as ``view_json``."""
        return {**view_json(loaded.state, seat, own_keys=own_keys), "head": loaded.head}

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
        if answer.get("code") in ("game_archived", "game_not_started"):
            # The referee found no log: what this gateway caches of the game may be all that
            # is left of a game Redis lost. The next load asks the store (and the archive).
            self.games.forget(entry.game)
        if answer.get("code") == "game_not_started" and await self.store.forgotten(entry.game):
            # A referee that never held the game finds no log: it has left Redis, archived.
            message = f"game {entry.game} was played to its end and archived: no more commands"
            return {**answer, "code": "game_archived", "message": message}
        return answer

    async def submit(
        self, game_id: str, seat: int, body: Any
    ) -> tuple[int, Accepted | dict[str, Any]]:
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
        if answer["status"] == "accepted":
            accepted: Accepted = {
                "accepted": True,
                "version": answer["version"],
                "head": answer["head"],
            }
            return 200, accepted
        code = answer.get("code") or "bad_request"
        receipt = {"version": answer["version"], "head": answer["head"]}
        return status_for(code), error_body(code, answer.get("message") or code, **receipt)

    async def push(
        self,
        watcher: Watcher,
        force: bool = False,
        since: int | None = None,
        loaded: Loaded | None = None,
    ) -> None:
        """Queue a watcher its current view (and the events it missed) on its socket. ``force``:
        the view even if the watcher has seen this version (a socket's first view, a resync);
        ``since``: the version the client says it has (a ``sync``), its events start after it;
        ``loaded``: the game as the caller has just loaded it (not loaded again, unless a push
        since then has queued a newer version).

        Only the log is awaited, never the socket. A push that is not forced (the feed's)
        skips a watcher whose own push is under way: that one goes round again."""
        if not force and watcher.lock.locked():
            watcher.behind = True
            return
        async with watcher.lock:
            if loaded is not None and loaded.version < watcher.sent_version:
                loaded = None  # news came (and was queued) while the caller waited for the lock
            if since is not None:
                watcher.sent_version = since
            while not watcher.outbox.closing:
                watcher.behind = False
                await self._queue_view(watcher, force, loaded)
                if not watcher.behind:
                    return
                force, loaded = False, None

    async def _queue_view(self, watcher: Watcher, force: bool, loaded: Loaded | None) -> None:
        if loaded is None:
            loaded = await self.games.load(watcher.game_id, fresh=True)
        if loaded.version < watcher.sent_version:
            # The client has seen a newer version (``?after=``) than the cached state, which
            # the feed has not caught up with yet: that is news too, so read the log (else
            # the view goes back, and the events after it come again).
            self.games.note(watcher.game_id, watcher.sent_version)
            loaded = await self.games.load(watcher.game_id, fresh=True)
        if loaded.version <= watcher.sent_version and not force:
            self._answer_alone(watcher, watcher.sent_version)  # their view went before them
            return
        after = min(watcher.sent_version, loaded.version)
        outbox = watcher.outbox
        # The events too for a socket that asked for them (``?after=`` or a ``sync``); a
        # socket that did not gets its view alone (one log read per change, not per socket).
        if watcher.catch_up and after < loaded.version:
            over = loaded.state.status == "finished"
            # Up to the view's version only: what was appended since comes with the next
            # push (read without a limit, it would come twice). A page at a time, each its
            # own frame: a long catch-up never holds the event loop for longer than a page.
            while after < loaded.version:
                page = min(CATCH_UP_PAGE, loaded.version - after)
                count, frame = await self.frames.events_page(
                    watcher.game_id, watcher.viewer, over, after, page
                )
                if frame is None:
                    # The log holds fewer events than the view's version: the view would skip
                    # them, and no view leaves the client waiting. It is told instead.
                    self.log.warning(
                        "a catch-up found no events",
                        **watcher_info(watcher),
                        after=after,
                        version=loaded.version,
                    )
                    outbox.put(
                        error_frame(
                            "internal",
                            f"the events after version {after} could not be read; "
                            "retrying (a sync) may help",
                        )
                    )
                    return
                if outbox.closing or not outbox.put(frame):
                    return
                after += count
        frame = self.frames.view(
            watcher.game_id,
            watcher.viewer,
            loaded.version,
            loaded.head,
            lambda: self.view(loaded, None, own_keys=False),  # built once for every viewer
            lambda: seat_part(loaded.state, watcher.viewer),
        )
        answered = [a for a in watcher.answers if a[0] <= loaded.version]
        if answered:  # the last answer and the view in one frame, any earlier answers before
            watcher.answers = [a for a in watcher.answers if a[0] > loaded.version]
            for _, text in answered[:-1]:
                outbox.put(text + "}")
            queued = outbox.put(answered[-1][1] + ',"view":' + frame[len(VIEW_FRAME) : -1] + "}")
        else:
            queued = outbox.put_view(frame)
        if queued:
            # Queued is as good as sent: the queue is delivered in order, or the socket is
            # closed and its client asks again from the last version it did get.
            watcher.sent_version = loaded.version

    def answer(self, watcher: Watcher, text: str, version: int | None) -> None:
        """Queue the answer (its frame's text) to a command the socket sent. When it changed
        the game (``version``: the game's version after it) and the socket has not been sent
        that view yet, the answer waits for it and goes in one frame with it: the view is
        pushed once the news of the change is folded (at once when it already is: the hub holds
        a socket's views back while its command is in flight), and a view the news does not
        bring within ``ANSWER_WAIT`` seconds is read from the log."""
        ready = False  # the view of the answer's change can be pushed at once
        if version is not None and version > watcher.sent_version and not watcher.outbox.closing:
            watcher.answers.append((version, text[:-1]))
            asyncio.get_running_loop().call_later(ANSWER_WAIT, self._answer_due, watcher, version)
            ready = self.games.cached_version(watcher.game_id) >= version
        else:
            watcher.outbox.put(text)
        # A change's view held back while the command was in flight goes now (with the answer
        # when it waits for one).
        held = watcher.held and not watcher.in_flight
        watcher.held = watcher.held and not held
        if held or ready:
            self._later(self.push(watcher))

    def _answer_due(self, watcher: Watcher, version: int) -> None:
        """An answer's wait is over: if it still waits, its view is read from the log."""
        if any(v <= version for v, _ in watcher.answers) and not watcher.outbox.closing:
            self._later(self._answer_late(watcher, version))

    async def _answer_late(self, watcher: Watcher, version: int) -> None:
        """The view of an answer's version came with no news: read it (and send whatever
        answer still waits alone)."""
        self.games.note(watcher.game_id, version)
        await self.push(watcher, force=True)
        self._answer_alone(watcher, version)

    def _answer_alone(self, watcher: Watcher, version: int) -> None:
        """Send the waiting answers up to ``version`` alone (their view is not coming)."""
        if not any(v <= version for v, _ in watcher.answers):
            return
        late = [a for a in watcher.answers if a[0] <= version]
        watcher.answers = [a for a in watcher.answers if a[0] > version]
        for _, text in late:
            watcher.outbox.put(text + "}")

    def _later(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in a task of its own, kept until it is done."""
        task = asyncio.create_task(work)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

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
        self, game_id: str, version: int, types: list[str], items: list[News]
    ) -> None:
        """Note the game's new version (folding what the news says changed onto the cached
        state, when it follows it: the referee chained and checked those events, so they are
        neither read back nor checked again); keep the lobby in step with games starting and
        ending."""
        self.games.note(game_id, version)
        if self.games.cached(game_id):  # else nobody here watches it
            for news in items:
                try:
                    self.games.take_news(news)
                except Exception as err:  # a record we cannot read: the store has it anyway
                    self.log.warning("news unreadable", game=game_id, error=str(err))
                    break
        if "GameStarted" in types:
            await self.lobby.move(game_id, "playing")
        if "MatchEnded" in types:
            await self.lobby.move(game_id, "finished")

    async def heartbeat(self) -> None:
        """The readiness loop's round trip: a write, not a ping. A Redis turned read-only
        replica still answers pings but refuses every write, and nearly every request here
        writes (commands, limits, tokens). The write is the time to live of this gateway's own
        reply stream, which it keeps anyway: no key of its own, one small write a beat (and
        the beat that finds the stream lost with Redis's data: ``redis_lost``)."""
        await self.requester.keep()

    async def redis_lost(self) -> None:
        """Redis came back without its data (or this gateway was cut off past its reply
        stream's time to live): the game states and tournament folds it caches may be all that
        is left of what Redis lost, so they go (the next load asks the store and the archive),
        with the tournament views built from them, and the feed is read again from its start."""
        dropped = self.games.clear()
        tournaments = self.tournaments.log.clear()
        self.tournament_views.clear()
        self.hub.follow_from_start()
        self.log.warning(
            "Redis lost this gateway's reply stream",
            games_dropped=dropped,
            tournaments_dropped=tournaments,
        )

    async def ready(self) -> tuple[bool, str]:
        """Ready when the last heartbeat, recent enough, was written (no Redis call here: under
        load one would wait behind every request in flight)."""
        return self.readiness.answer("ok")


def event_for(stored: Any, viewer: int | None, finished: bool) -> dict[str, Any]:
    """A stored event as ``viewer`` may see it, with its place in the chain."""
    shown = event_json(event_from(stored.type, stored.data), viewer, finished)
    return {"version": stored.version, "time": stored.time, "hash": stored.hash, **shown}


# Typed: ``request.app[GATEWAY]`` is a ``Gateway`` to mypy too.
GATEWAY = web.AppKey("gateway", Gateway)
