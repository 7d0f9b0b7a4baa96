"""Who is alive among the processes of one kind (referees, scorers): a heartbeat in a sorted set.

Why: sharing work fairly, and forgetting a dead process's consumer, both need the same answer
to "who is still there", and it must not depend on any host's clock: a host 40 s ahead must
not look alive 40 s after it died, nor make its peers look dead while they live.

How: every process stamps its name in the set with the time (score: unix seconds) and forgets
the members silent for longer than ``ttl_ms``; the live ones are those stamped within it. The
time is Redis's own (``TIME``, read inside the script) unless ``now`` is given: a time source
in Redis's seconds that tests step instead of sleeping.
"""

from __future__ import annotations

from collections.abc import Callable

from shared.infra.client import RedisClient

# Shared by every script that may be given the time: ARGV's milliseconds, or Redis's own.
NOW = """
local function now_ms(given)
  if given ~= '' then return tonumber(given) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
"""

# KEYS[1]: the members; ARGV[1]: the name, ARGV[2]: ttl in ms, ARGV[3]: now in ms ('': Redis's).
# Stamps the name, forgets members silent for longer than ttl; returns the live names and those
# heard from within half of it.
BEAT = (
    NOW
    + """
local now = now_ms(ARGV[3])
local ttl = tonumber(ARGV[2])
local silent = string.format('%.6f', (now - ttl) / 1000)
redis.call('ZADD', KEYS[1], string.format('%.6f', now / 1000), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. silent)
local fresh = string.format('%.6f', (now - ttl / 2) / 1000)
return {redis.call('ZRANGEBYSCORE', KEYS[1], silent, '+inf'),
        redis.call('ZRANGEBYSCORE', KEYS[1], fresh, '+inf')}
"""
)
# KEYS[1]: the members; ARGV[1]: ttl in ms, ARGV[2]: now in ms ('': Redis's). The live names.
LIVE = (
    NOW
    + """
local now = now_ms(ARGV[2])
local silent = string.format('%.6f', (now - tonumber(ARGV[1])) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], silent, '+inf')
"""
)


class Members:
    """One process's place among the live members of ``key``."""

    def __init__(
        self,
        client: RedisClient,
        key: str,
        name: str,
        ttl_ms: int,
        now: Callable[[], float] | None = None,
    ) -> None:
        self.client = client
        self.key = key
        self.name = name
        self.ttl_ms = ttl_ms
        self.now = now
        self.fresh: set[str] = set()  # at the last heartbeat: those heard from within ttl / 2
        self._beat = client.register_script(BEAT)
        self._live = client.register_script(LIVE)

    def now_arg(self) -> str:
        """The time argument of a script: milliseconds, or '' for Redis's own ``TIME``."""
        return "" if self.now is None else f"{self.now() * 1000:.3f}"

    async def beat(self) -> list[str]:
        """Heartbeat; the live members (this one among them), sorted by name. ``fresh``
        becomes those heard from within half a ttl (surely alive, not about to be forgotten)."""
        args: list[str | int] = [self.name, self.ttl_ms, self.now_arg()]
        live, fresh = await self._beat(keys=[self.key], args=args)
        self.fresh = {_text(n) for n in fresh} | {self.name}
        return sorted({_text(n) for n in live} | {self.name})

    async def live(self) -> list[str]:
        """The live members, sorted by name (no heartbeat)."""
        names = await self._live(keys=[self.key], args=[self.ttl_ms, self.now_arg()])
        return sorted(_text(n) for n in names)

    async def leave(self) -> None:
        """Leave the members (a clean stop: peers stop counting this one at once)."""
        await self.client.zrem(self.key, self.name)


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
