"""Rate limits that hold across every gateway: a bucket per limit and subject (a client address,
a token, a seat, a socket) kept in Redis and checked by one small Lua script.

The script is GCRA (the generic cell rate algorithm: a token bucket kept as one number, the
time at which the bucket would be full again). A limit of ``rate`` requests a second with bursts
of ``burst`` lets ``burst`` requests through at once, then one every ``1 / rate`` seconds. A
refused request changes nothing; a bucket's key expires when it is full again, so idle clients
leave nothing behind. Each bucket is one key of its own (no hash tag), so buckets spread over a
Redis Cluster and every check touches one slot.

Time: Redis's own clock (``TIME`` inside the script) unless a clock is injected (tests do).
Every gateway then reads one clock per bucket (its key lives on one node): with host clocks, a
gateway running ahead of the others would let a client through early and one running behind
would hold it back.

Our own module rather than a library: the ones that keep buckets in Redis open their own
connection from a URL (not our client: the embedded stand-in, the auto-pipeline, a cluster
client), name keys their own way, and take the time from the host with no clock to inject;
the whole algorithm here is a dozen lines of Lua.

A flood is refused without Redis: each gateway keeps its own copy of the buckets it has seen
(:class:`MemoryBuckets`), and a request that copy already refuses is refused at once. That is never
wrong: the copy holds only what Redis said (the passes this gateway counted, the waits Redis
refused with), and the shared bucket only fills faster than that (other gateways' passes), so
when the copy says "wait", Redis would too. It spares Redis and the gateway a round trip for
each of a flood's refused requests, which are nearly all of them.

A request that passed but that the service could not serve (its pool had no room: see
``answers``) gives its pass back (:meth:`Pass.give_back`): the shared bucket is full again one
interval sooner, as if the request had never counted, but never sooner than now, so a pass
given back late makes no room past the burst. Until it comes back a pass counts for every
gateway, so together they never let through more than the limit. This gateway's copy is
emptied the same way; another gateway's copy may hold a wait Redis gave it while the pass was
out, and so refuse that client a little longer than Redis would, never past the Retry-After it
gave.

Retry-After counts from when the client reads it: a refusal is held before it is sent
(``tarpit``), so its figure is worked out again as it goes out (:class:`RateLimited`).
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter

from services.gateway.auth import token_hash
from services.gateway.client_address import counted_address, trusted_networks
from services.gateway.errors import ApiError, error_body
from shared.infra.client import RedisClient
from shared.infra.keys import Keys
from shared.infra.settings import Settings

# KEYS[1]: the bucket (when it is full again, in µs). ARGV[1]: µs per request; ARGV[2]: µs of
# burst (requests at once x µs per request); ARGV[3]: now in µs, or -1 for Redis's clock.
# Returns 0 if the request passes (and counts), else the µs until one would.
SCRIPT = """
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
if now < 0 then
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000000 + tonumber(time[2])
end
local full_at = tonumber(redis.call('GET', KEYS[1]) or now)
if full_at < now then
  full_at = now
end
local wait = full_at + interval - burst - now
if wait > 0 then
  return math.ceil(wait)
end
full_at = full_at + interval
local ttl = math.max(1, math.ceil((full_at - now) / 1000))
redis.call('SET', KEYS[1], string.format('%.0f', full_at), 'PX', ttl)
return 0
"""

# KEYS[1]: the bucket. ARGV[1]: µs a pass took; ARGV[2]: now in µs, or -1 for Redis's clock.
# Gives the pass back: the bucket is full again that much sooner (gone if that is now or before).
GIVE_BACK = """
local interval = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
if now < 0 then
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000000 + tonumber(time[2])
end
local stored = redis.call('GET', KEYS[1])
if not stored then
  return 0
end
local full_at = tonumber(stored) - interval
if full_at <= now then
  redis.call('DEL', KEYS[1])
  return 0
end
local ttl = math.max(1, math.ceil((full_at - now) / 1000))
redis.call('SET', KEYS[1], string.format('%.0f', full_at), 'PX', ttl)
return 0
"""

Clock = Callable[[], float]

SYNC_BURST = 5.0  # syncs one socket may send at once
MEMORY_BUCKETS = 50_000  # buckets each gateway keeps in memory (some megabytes at most)


class MemoryBuckets:
    """Buckets in this process's memory: for each, when it would be full again (in this
    process's clock). Two uses: a gateway's copy of the buckets kept in Redis (what Redis
    answered: never fuller than the shared bucket, so a wait it gives is a wait Redis would
    give), and the buckets of a limit each gateway counts on its own (the reads), which live
    here only. Bounded: the least recently used bucket is forgotten first, which costs a round
    trip to Redis later (a copy), or lets that client pass a little early (a limit of ours)."""

    def __init__(self, clock: Clock, size: int = MEMORY_BUCKETS) -> None:
        self.clock = clock
        self.size = size
        self._full_at: OrderedDict[str, float] = OrderedDict()

    def wait(self, key: str, interval: float, burst: float) -> float:
        """Seconds ``key`` must wait by what is known here (0: none known; for a copy, ask
        Redis)."""
        full_at = self._full_at.get(key)
        if full_at is None:
            return 0.0
        now = self.clock()
        if full_at <= now:
            del self._full_at[key]  # full again: nothing left to know
            return 0.0
        return max(0.0, full_at + interval - burst - now)

    def passed(self, key: str, interval: float) -> None:
        """A request passed (by Redis's word, or by ours): the bucket is one interval fuller
        (at least)."""
        now = self.clock()
        self._remember(key, max(self._full_at.get(key, now), now) + interval)

    def given_back(self, key: str, interval: float) -> None:
        """A pass came back: the bucket is one interval emptier (and nothing is left to know
        once it is full)."""
        full_at = self._full_at.get(key)
        if full_at is None:
            return
        if full_at - interval <= self.clock():
            del self._full_at[key]
        else:
            self._full_at[key] = full_at - interval

    def refused(self, key: str, interval: float, burst: float, wait: float) -> None:
        """Redis refused with ``wait`` seconds: its bucket is full until at least then."""
        self._remember(
            key, max(self._full_at.get(key, 0.0), self.clock() + wait + burst - interval)
        )

    def _remember(self, key: str, full_at: float) -> None:
        self._full_at[key] = full_at
        self._full_at.move_to_end(key)
        while len(self._full_at) > self.size:
            self._full_at.popitem(last=False)


@dataclass(frozen=True)
class Limit:
    """One limit: ``rate`` requests a second (0: off) with bursts of ``burst``."""

    name: str  # its key part
    what: str  # what a refusal says is too many
    rate: float
    burst: float

    @classmethod
    def per_second(cls, name: str, what: str, rate: float) -> Limit:
        """``rate`` a second, bursts of twice that."""
        return cls(name, what, rate, max(2.0 * rate, 1.0))

    @classmethod
    def per_minute(cls, name: str, what: str, count: float) -> Limit:
        """``count`` a minute, bursts of a minute's worth."""
        return cls(name, what, count / 60.0, max(count, 1.0))


class RateLimited(ApiError):
    """A 429 with ``Retry-After``: the whole seconds (at least 1) until the request may pass,
    counted from when the refusal is sent. A refusal is held before it goes out (``tarpit``)
    and a client counts Retry-After from when it reads it: worked out when the request was
    refused, the figure would be stale by the hold, and the client would wait that much longer
    than it must. So it is worked out again as the answer is sent (:meth:`prepare`)."""

    def __init__(self, limit: Limit, seconds: float, clock: Clock) -> None:
        self.limit = limit
        self.clock = clock
        self.due = clock() + seconds  # when the request may pass, on ``clock``
        super().__init__(429, "rate_limited", "")
        self._figure()

    @property
    def retry_after(self) -> int:
        """Whole seconds from now until the request may pass (at least 1)."""
        return max(1, math.ceil(round(self.due - self.clock(), 6)))

    def frame(self, frame_id: Any) -> dict[str, Any]:
        """The WebSocket answer frame of a refused frame (sent at once, held after)."""
        seconds = self.retry_after
        return {
            "type": "answer",
            "id": frame_id,
            "status": 429,
            "body": self._error(seconds),
            "retry_after": seconds,
        }

    async def prepare(self, request: web.BaseRequest) -> AbstractStreamWriter | None:
        """Sent as the refusal stands now, after any hold."""
        self._figure()
        return await super().prepare(request)

    def _figure(self) -> None:
        seconds = self.retry_after
        self.headers["Retry-After"] = str(seconds)
        self.text = json.dumps(self._error(seconds))

    def _error(self, seconds: int) -> dict[str, Any]:
        return error_body("rate_limited", f"too many {self.limit.what}; retry in {seconds} s")


@dataclass(frozen=True)
class Pass:
    """What a request that passed a limit took from its bucket in Redis, to give back if the
    service cannot serve the request after all (once at most)."""

    limits: Limits
    key: str
    interval: float  # seconds

    async def give_back(self) -> None:
        """The bucket is emptier by this pass, in Redis and in this gateway's copy."""
        await self.limits.give_back(self)


class Limits:
    """Every limit of the gateway (from the settings) and their checks."""

    def __init__(self, client: RedisClient, settings: Settings, clock: Clock | None = None) -> None:
        self.keys = Keys(settings.prefix)
        self.clock = clock
        self.local = clock or time.monotonic  # this process's time: copies, refusals' figures
        self.copies = MemoryBuckets(self.local)  # of the buckets in Redis
        self.reads = MemoryBuckets(self.local)  # the read buckets: ours alone
        self.trusted = trusted_networks(settings.trusted_proxies)
        self._script = client.register_script(SCRIPT)
        self._give_back = client.register_script(GIVE_BACK)
        s = settings
        self.address = Limit.per_second(
            "address", "requests from this address", s.limit_address_per_second
        )
        self.command = Limit.per_second("command", "commands for this token", s.rate_per_second)
        self.create = Limit.per_minute(
            "create", "games created from this address", s.limit_create_per_minute
        )
        self.seat = Limit.per_minute(
            "seat", "seats taken from this address", s.limit_seat_per_minute
        )
        self.hint = Limit.per_minute("hint", "hints for this seat", s.limit_hint_per_minute)
        self.replay = Limit.per_minute(
            "replay",
            "replays, exports and event pages from this address",
            s.limit_replay_per_minute,
        )
        self.reading = Limit.per_second(
            "read", "views and lobby pages from this address", s.limit_read_per_second
        )
        # A sync is a catch-up of the log: a new socket may send a few at once, not a
        # minute's worth.
        sync = s.limit_sync_per_minute
        self.sync = Limit(
            "sync",
            "syncs and re-authentications on this socket",
            sync / 60.0,
            min(max(sync, 1.0), SYNC_BURST),
        )

    async def wait(self, limit: Limit, subject: str, cost: float = 1.0) -> int:
        """0 if ``subject`` may pass ``limit`` now (and this request counts as ``cost``
        requests, at most a burst's worth), else the whole seconds (at least 1) until it may."""
        seconds, _ = await self._ask(limit, subject, cost)
        return max(1, math.ceil(seconds)) if seconds > 0 else 0

    async def _ask(self, limit: Limit, subject: str, cost: float) -> tuple[float, Pass | None]:
        """(0, what this request took; None if the limit is off) if ``subject`` may pass
        ``limit`` now, else (the seconds until it may, None)."""
        if limit.rate <= 0:
            return 0.0, None
        burst = limit.burst / limit.rate
        interval = min(max(cost, 1.0), limit.burst) / limit.rate  # what this request takes
        key = self.keys.limit(limit.name, subject)
        known = self.copies.wait(key, interval, burst)
        if known > 0:
            return known, None
        waited = int(
            await self._script(keys=[key], args=[interval * 1e6, burst * 1e6, self._now()])
        )
        if waited <= 0:
            self.copies.passed(key, interval)
            return 0.0, Pass(self, key, interval)
        self.copies.refused(key, interval, burst, waited / 1e6)
        return waited / 1e6, None

    async def give_back(self, taken: Pass) -> None:
        """Give back a pass a request took (see :class:`Pass`)."""
        self.copies.given_back(taken.key, taken.interval)
        await self._give_back(keys=[taken.key], args=[taken.interval * 1e6, self._now()])

    def _now(self) -> int:
        """Now in µs for the scripts: the injected clock's, or -1 for Redis's own."""
        return -1 if self.clock is None else round(self.clock() * 1e6)

    def read(self, request: web.BaseRequest) -> None:
        """The per-address read limit (views, lobby pages): pass, or raise ``RateLimited``.
        Counted by each gateway on its own, in memory: a read is too cheap to spend a round
        trip to Redis on, and bounding each gateway's share bounds the whole."""
        limit = self.reading
        if limit.rate <= 0:
            return
        interval = 1.0 / limit.rate
        address = self.address_of(request)
        wait = self.reads.wait(address, interval, limit.burst * interval)
        if wait > 0:
            raise RateLimited(limit, wait, self.local)
        self.reads.passed(address, interval)

    async def refusal(
        self, *checks: tuple[Limit, str] | tuple[Limit, str, float]
    ) -> RateLimited | None:
        """The refusal of the first of ``checks`` (limit, subject, and optionally the cost of
        this request) that does not pass, in order (those before it count this request), or
        None if all pass."""
        for limit, subject, *cost in checks:
            seconds, _ = await self._ask(limit, subject, cost[0] if cost else 1.0)
            if seconds > 0:
                return RateLimited(limit, seconds, self.local)
        return None

    async def take(self, limit: Limit, subject: str) -> Pass | None:
        """Pass, returning what this request took (None: the limit is off), or raise
        ``RateLimited``."""
        seconds, taken = await self._ask(limit, subject, 1.0)
        if seconds > 0:
            raise RateLimited(limit, seconds, self.local)
        return taken

    async def check(self, limit: Limit, subject: str) -> None:
        """Pass, or raise ``RateLimited``."""
        await self.take(limit, subject)

    def address_of(self, request: web.BaseRequest) -> str:
        """The client address the request counts under (worked out once per request)."""
        return counted_address(request, self.trusted)

    async def at_address(self, request: web.BaseRequest, route: Limit | None = None) -> str:
        """The per-address limit every writing or computing route shares, then the route's own
        per-address limit (if any); returns the address."""
        address = self.address_of(request)
        await self.check(self.address, address)
        if route is not None:
            await self.check(route, address)
        return address

    async def token(self, token: str) -> None:
        """The per-token command limit (commands, and the host's start)."""
        await self.check(self.command, token_hash(token)[:32])

    async def seat_hint(self, game_id: str, seat: int) -> Pass | None:
        """The per-seat hint limit; returns what the hint took (to give back if it cannot be
        worked out)."""
        return await self.take(self.hint, f"{game_id}:{seat}")


@dataclass
class SocketLimits:
    """The limits of one WebSocket: its client's address (read when it connected), the token
    it sends commands with, and the socket itself for syncs and re-authentications."""

    limits: Limits
    address: str
    socket: str = field(default_factory=lambda: uuid.uuid4().hex)

    async def sync(self, pages: int = 1) -> RateLimited | None:
        """None if a sync or re-auth frame may pass, else its refusal. A sync that catches up
        ``pages`` pages of events counts as that many (at most a burst's worth): a long
        catch-up costs the gateway that many times the work of a short one."""
        limits = self.limits
        return await limits.refusal(
            (limits.address, self.address), (limits.sync, self.socket, float(pages))
        )

    async def command(self, token: str) -> RateLimited | None:
        """None if a command frame may pass, else its refusal."""
        limits = self.limits
        subject = token_hash(token)[:32]
        return await limits.refusal((limits.address, self.address), (limits.command, subject))
