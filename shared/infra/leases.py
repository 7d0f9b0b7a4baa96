"""Partition leases: which referee reads which command partitions.

Why: a consumer group hands each entry to whichever referee asks first, so with two referees a
game's commands alternate between them, and each decides half the time on a cached state that
the other has moved on (a version conflict, a reload, a second append). With leases every
partition is read by one referee at a time, whose cache of its games stays current.

How: every live referee is a member of a sorted set (score: its last heartbeat, in Redis's own
time: the heartbeat script reads ``TIME``, so a host whose clock runs ahead never looks alive
after it died, nor makes its peers look dead while they live). Each refresh,
a referee counts the live members, takes its fair share (``ceil(partitions / live)``), renews
the leases it holds, gives back any above its share (a peer has joined), and tries to take free
ones up to its share. A lease is a key holding the holder's name with a time to live: a referee
that dies stops renewing, its leases expire, and the others take its partitions. Correctness
never rests on a lease (the append's version check does that; the consumer group never delivers
an entry twice at once); leases only keep caches warm. Entries a dead referee had read stay
pending until a peer claims them (``claim_idle_ms``), whoever holds the partition.

A Redis out of memory refuses the heartbeat and the taking of free leases (both add data) but
never a renewal (``PEXPIRE``): a refresh that cannot heartbeat still renews what it holds, so the
partitions stay read (and their pending entries retried) through it.
"""

from __future__ import annotations

import math
import random

from shared.infra.client import RedisClient
from shared.infra.keys import Keys

# KEYS[1]: the members; ARGV[1]: the holder, ARGV[2]: ttl in ms. Stamps the holder's heartbeat
# with Redis's time (unix seconds), forgets members silent for longer than a lease, and returns
# how many are left.
HEARTBEAT = """
local now = redis.call('TIME')
local seconds = tonumber(now[1]) + tonumber(now[2]) / 1000000
redis.call('ZADD', KEYS[1], string.format('%.6f', seconds), ARGV[1])
local silent = seconds - tonumber(ARGV[2]) / 1000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%.6f', silent))
return redis.call('ZCARD', KEYS[1])
"""
# KEYS[1]: the lease; ARGV[1]: the holder, ARGV[2]: ttl in ms. 1 if the holder still holds it.
RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
# KEYS[1]: the lease; ARGV[1]: the holder. Deletes it only if it is still the holder's.
RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class PartitionLeases:
    """One referee's leases over the command partitions."""

    def __init__(self, client: RedisClient, keys: Keys, holder: str, partitions: int, ttl_ms: int):
        self.client = client
        self.keys = keys
        self.holder = holder
        self.partitions = partitions
        self.ttl_ms = ttl_ms
        self.held: set[int] = set()
        self._heartbeat = client.register_script(HEARTBEAT)
        self._renew = client.register_script(RENEW)
        self._release = client.register_script(RELEASE)

    async def live(self) -> int:
        """Heartbeat, forget members silent for longer than a lease, and count the live ones
        (all in Redis's time)."""
        keys = [self.keys.referees()]
        return max(1, int(await self._heartbeat(keys=keys, args=[self.holder, self.ttl_ms])))

    async def refresh(self) -> set[int]:
        """Renew, give back and take leases; the partitions held now. Raises (after renewing
        what it holds) when the heartbeat fails."""
        try:
            share = math.ceil(self.partitions / await self.live())
        except Exception:
            await self._renew_held()  # out of memory refuses the heartbeat, never a renewal
            raise
        await self._renew_held()
        for partition in sorted(self.held)[share:]:
            await self._release(keys=[self.keys.lease(partition)], args=[self.holder])
            self.held.discard(partition)
        if len(self.held) < share:
            free = [p for p in range(self.partitions) if p not in self.held]
            random.shuffle(free)  # peers starting together do not all try the same ones
            for partition in free:
                taken = await self.client.set(
                    self.keys.lease(partition), self.holder, nx=True, px=self.ttl_ms
                )
                if taken:
                    self.held.add(partition)
                    if len(self.held) >= share:
                        break
        return set(self.held)

    async def _renew_held(self) -> None:
        for partition in sorted(self.held):
            lease = self.keys.lease(partition)
            if not await self._renew(keys=[lease], args=[self.holder, self.ttl_ms]):
                self.held.discard(partition)  # expired while we were away, and maybe taken

    async def give_up(self) -> None:
        """Release every lease and leave the members (a clean stop: peers take over at once)."""
        for partition in sorted(self.held):
            await self._release(keys=[self.keys.lease(partition)], args=[self.holder])
        self.held.clear()
        await self.client.zrem(self.keys.referees(), self.holder)
