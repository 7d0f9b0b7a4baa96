"""Bounding the streams: entries every reader is done with are trimmed, and the reply streams
of senders that are gone expire.

Why: Redis keeps a stream's entries until told otherwise. The command streams grew by every
command ever sent (more than half of Redis on top of the logs themselves), the feed by every
change, and every gateway process ever started left its reply stream behind.

- A stream read in consumer groups (the commands; the feed) is trimmed below the oldest entry
  any group still needs: its oldest pending entry (read, not acknowledged: a dead consumer's
  is claimed later) or, with none pending, its last delivered one. An entry not yet delivered,
  or pending, is never trimmed. ``keep`` entries at the end always stay (the gateways follow
  the feed without a group, from where they are). The bound is read and applied in one script
  (``XTRIM MINID``: the entries below it, exactly). A stream no group reads yet is left to its
  writers' ``MAXLEN``.
- A reply stream carries a time to live its sender refreshes while it runs
  (``shared/infra/bus.py``); one an answer re-created after its sender went (so without a TTL)
  is given one by ``expire_orphans``, once it has gone without for longer than a running
  sender's refresh: a stream without one is also how a running sender tells that Redis lost
  its data (an answer re-created its stream), and a TTL given first would hide that.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from shared.infra.client import RedisClient
from shared.infra.keys import Keys

REPLY_TTL_MS = 10 * 60 * 1000  # a reply stream outlives its sender by at most this
REPLY_REFRESH_SECONDS = 60.0  # a running sender refreshes its stream's TTL this often
ORPHAN_GRACE_SECONDS = 2 * REPLY_REFRESH_SECONDS  # a stream without a TTL is left alone so long
FEED_KEEP = 1000  # feed entries always kept at the end of each partition

# KEYS[1]: the stream; ARGV[1]: entries always kept at the end. Returns the entries trimmed.
TRIM = """
local function older(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as < bs)
end
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local groups = redis.call('XINFO', 'GROUPS', KEYS[1])
if #groups == 0 then return 0 end
local floor = nil
for _, group in ipairs(groups) do
  local info = {}
  for i = 1, #group, 2 do info[group[i]] = group[i + 1] end
  local bound = info['last-delivered-id']
  if tonumber(info['pending']) > 0 then
    local oldest = redis.call('XPENDING', KEYS[1], info['name'], '-', '+', 1)
    if #oldest > 0 then bound = oldest[1][1] end
  end
  if floor == nil or older(bound, floor) then floor = bound end
end
local keep = tonumber(ARGV[1])
if keep > 0 then
  local tail = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', keep)
  if #tail < keep then return 0 end
  local first = tail[#tail][1]
  if older(first, floor) then floor = first end
end
if floor == '0-0' then return 0 end
return redis.call('XTRIM', KEYS[1], 'MINID', floor)
"""


class Trimmer:
    """Trims one deployment's streams and expires its orphaned reply streams."""

    def __init__(
        self, client: RedisClient, keys: Keys, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """``clock``: seconds, for how long a reply stream has gone without a TTL (tests)."""
        self.client = client
        self.keys = keys
        self.clock = clock
        self._trim = client.register_script(TRIM)
        self._bare: dict[str, float] = {}  # reply streams seen without a TTL, and since when

    async def trim(self, stream: str, keep: int = 0) -> int:
        """Trim ``stream`` below what its groups still need (``keep`` entries at the end stay);
        how many entries went."""
        return int(await self._trim(keys=[stream], args=[keep]))

    async def expire_orphans(self) -> int:
        """Give a time to live (``REPLY_TTL_MS``) to every reply stream seen without one for
        ``ORPHAN_GRACE_SECONDS``: an answer re-created it after its sender had gone (a running
        sender would have made it again, with one, at its refresh). How many it gave one."""
        now = self.clock()
        bare: dict[str, float] = {}
        given = 0
        async for raw in self.client.scan_iter(match=f"{self.keys.replies('')}*", count=1000):
            key = raw.decode() if isinstance(raw, bytes) else str(raw)
            if int(await self.client.pttl(key)) != -1:
                continue
            since = self._bare.get(key, now)
            if now - since >= ORPHAN_GRACE_SECONDS:
                await self.client.pexpire(key, REPLY_TTL_MS)
                given += 1
            else:
                bare[key] = since
        self._bare = bare
        return given
