"""Partition leases: which referee reads which command partitions.

Why: a consumer group hands each entry to whichever referee asks first, so with two referees a
game's commands alternate between them, and each decides half the time on a cached state that
the other has moved on (a version conflict, a reload, a second append). With leases every
partition is read by one referee at a time, whose cache of its games stays current. Moving a
partition costs a cold cache and a pause in its reading, so leases move only when they must.

How: every live referee heartbeats in a sorted set (``shared/infra/members.py``, in Redis's own
time). A lease is a key holding its holder's name, expiring ``ttl_ms`` after its last renewal.
Each refresh a referee heartbeats, looks at every lease (renewing its own, and so picking up any
handed to it) and computes the shares: with ``live`` referees sorted by name, each holds
``floor(partitions / live)``, and the first ``partitions mod live`` one more, so that shares
differ by at most one. Then:

- above its share (a peer joined), it hands the surplus over to live peers below theirs, the
  lease rewritten to the successor's name (never released to a race): only to a peer whose
  heartbeat it has seen within half a lease (not one about to be counted dead), and only as
  many as peers lack;
- below its share (a peer died or left), it takes free leases (no holder, or expired) up to it;
- at its share it changes nothing. So every partition moves at most once per change of the
  members, from a referee above its share to one below.

A dead referee stops renewing; its leases expire and its peers, now below their shares, take
them. A clean stop (``give_up``) leaves the members and hands every lease to the peers below
their new shares (releasing what none can take), so nothing waits for an expiry. A referee acts
on a partition (reads it) only while its last look found the lease its own; correctness never
rests on a lease all the same (the append's version check does that; the consumer group never
delivers an entry twice at once): leases keep caches warm. Entries a dead referee had read stay
pending until a peer claims them (``claim_idle_ms``), whoever holds the partition.

Time: the scripts read Redis's ``TIME`` unless ``now`` is given (tests step it); lease expiry is
the key's own (``PEXPIREAT``), compared with that time. A given ``now`` must not run behind
Redis's clock (else Redis expires a key before its time); tests start theirs at the wall clock.

A Redis out of memory refuses the heartbeat, the taking and the handing over (they add data)
but never a renewal (``PEXPIREAT``): a refresh that cannot heartbeat still renews what it holds,
so the partitions stay read (and their pending entries retried) through it.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable, Iterable, Sequence

from shared.infra.client import RedisClient
from shared.infra.keys import Keys
from shared.infra.members import NOW, Members

# The lease's end as the key's expiry: -1 (none) counts as held, -2 (gone) cannot occur after GET.
_LIVE_LEASE = """
local function held(key, now)
  local till = redis.call('PEXPIRETIME', key)
  return till < 0 or till > now
end
local function until_ms(now, ttl)
  return string.format('%d', math.floor(now + tonumber(ttl)))
end
"""
# KEYS[1]: the lease; ARGV[1]: the holder, ARGV[2]: ttl in ms, ARGV[3]: now in ms ('': Redis's).
# The holder of a live lease (renewed if it is ARGV[1]'s), or false if the lease is free.
LOOK = (
    NOW
    + _LIVE_LEASE
    + """
local now = now_ms(ARGV[3])
local holder = redis.call('GET', KEYS[1])
if not holder or not held(KEYS[1], now) then return false end
if holder == ARGV[1] then
  redis.call('PEXPIREAT', KEYS[1], until_ms(now, ARGV[2]))
end
return holder
"""
)
# KEYS[1]: the lease; ARGV[1]: the taker, ARGV[2]: ttl in ms, ARGV[3]: now in ms. 1 if it was
# free and is now the taker's.
TAKE = (
    NOW
    + _LIVE_LEASE
    + """
local now = now_ms(ARGV[3])
if redis.call('GET', KEYS[1]) and held(KEYS[1], now) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', until_ms(now, ARGV[2]))
return 1
"""
)
# KEYS[1]: the lease; ARGV[1]: the holder, ARGV[2]: the successor, ARGV[3]: ttl in ms,
# ARGV[4]: now in ms. 1 if the holder still held it and it is now the successor's.
HAND_OVER = (
    NOW
    + _LIVE_LEASE
    + """
local now = now_ms(ARGV[4])
if redis.call('GET', KEYS[1]) ~= ARGV[1] or not held(KEYS[1], now) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PXAT', until_ms(now, ARGV[3]))
return 1
"""
)
# KEYS[1]: the lease; ARGV[1]: the holder. Deletes it only if it is still the holder's.
RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def shares(live: Sequence[str], partitions: int) -> dict[str, int]:
    """Each live referee's share: ``floor(partitions / live)``, one more for the first
    ``partitions mod live`` by name (so every referee computes the same shares)."""
    names = sorted(set(live))
    if not names:
        return {}
    base, extra = divmod(partitions, len(names))
    return {name: base + (1 if rank < extra else 0) for rank, name in enumerate(names)}


class PartitionLeases:
    """One referee's leases over the command partitions."""

    def __init__(
        self,
        client: RedisClient,
        keys: Keys,
        holder: str,
        partitions: int,
        ttl_ms: int,
        now: Callable[[], float] | None = None,
        *,
        lease: Callable[[int], str] | None = None,
        members: str | None = None,
    ) -> None:
        """``now``: the time (unix seconds, as Redis counts them) the leases are kept in;
        None: Redis's own ``TIME``, read inside every script. ``lease`` and ``members``: the
        keys of another kind of process sharing the partitions (the bots'); the referees'
        by default."""
        self.client = client
        self.keys = keys
        self.holder = holder
        self.partitions = partitions
        self.ttl_ms = ttl_ms
        self.lease_key = lease or keys.lease
        self.members = Members(client, members or keys.referees(), holder, ttl_ms, now)
        self.held: set[int] = set()
        self.live: list[str] = []  # the live referees at the last refresh, by name
        self.holders: dict[int, str | None] = {}  # every lease's holder at the last refresh
        self._look = client.register_script(LOOK)
        self._take = client.register_script(TAKE)
        self._hand_over = client.register_script(HAND_OVER)
        self._release = client.register_script(RELEASE)
        # Where this referee starts looking for free leases: peers starting together do not
        # all try the same ones first.
        self._start = zlib.crc32(holder.encode()) % max(partitions, 1)

    async def refresh(self) -> set[int]:
        """Heartbeat, renew, hand over or take leases; the partitions held now. Raises (after
        renewing what it holds) when the heartbeat fails."""
        try:
            live = await self.members.beat()
        except Exception:
            await self.look(sorted(self.held))  # out of memory refuses the heartbeat, never this
            raise
        self.live = live
        holders = await self.look(range(self.partitions))
        share = shares(live, self.partitions)[self.holder]
        if len(self.held) > share:
            await self._hand_surplus(holders, share, live)
        elif len(self.held) < share:
            await self._take_free(holders, share - len(self.held))
        self.holders = holders
        return set(self.held)

    def still_here(self) -> Callable[[str], bool] | None:
        """For the first live member by name (one is enough to forget the departed; None for
        the others): whether a consumer is still someone's, live or holding a lease, as of the
        last refresh."""
        if not self.live or self.live[0] != self.holder:
            return None
        keep = {*self.live, self.holder, *(h for h in self.holders.values() if h)}
        return keep.__contains__

    async def look(self, partitions: Iterable[int]) -> dict[int, str | None]:
        """Each partition's holder (None: free), renewing this referee's own leases (one round
        trip under auto-pipelining); ``held`` becomes the ones found this referee's."""
        wanted = list(partitions)
        now = self.members.now_arg()
        replies = await asyncio.gather(
            *(
                self._look(keys=[self.lease_key(p)], args=[self.holder, self.ttl_ms, now])
                for p in wanted
            )
        )
        holders = {p: None if r is None else _text(r) for p, r in zip(wanted, replies, strict=True)}
        for partition, holder in holders.items():
            if holder == self.holder:
                self.held.add(partition)
            else:
                self.held.discard(partition)  # expired while we were away, or handed over
        return holders

    async def _hand_surplus(
        self, holders: dict[int, str | None], share: int, live: Sequence[str]
    ) -> None:
        """Hand the leases above ``share`` to live peers below theirs (by name), no more than
        they lack; the rest stay (a peer below its share takes them when it counts)."""
        surplus = sorted(self.held)[share:]
        for successor, lacking in _lacking(holders, shares(live, self.partitions)):
            if successor == self.holder or successor not in self.members.fresh:
                continue  # a peer silent for half a lease may be dying: not a successor
            while lacking and surplus:
                partition = surplus.pop()
                now = self.members.now_arg()
                lease = self.lease_key(partition)
                args: list[str | int] = [self.holder, successor, self.ttl_ms, now]
                if await self._hand_over(keys=[lease], args=args):
                    holders[partition] = successor
                    lacking -= 1
                self.held.discard(partition)  # handed over, or no longer ours anyway

    async def _take_free(self, holders: dict[int, str | None], wanted: int) -> None:
        order = [(self._start + i) % self.partitions for i in range(self.partitions)]
        for partition in (p for p in order if holders.get(p) is None):
            if wanted <= 0:
                return
            now = self.members.now_arg()
            lease = self.lease_key(partition)
            if await self._take(keys=[lease], args=[self.holder, self.ttl_ms, now]):
                holders[partition] = self.holder
                self.held.add(partition)
                wanted -= 1

    async def give_up(self) -> None:
        """Leave the members and hand every lease to the peers below their new shares,
        releasing what none lacks (a clean stop: peers take over at once, no expiry)."""
        await self.members.leave()
        peers = [name for name in await self.members.live() if name != self.holder]
        holders = await self.look(range(self.partitions))
        lacking = [
            name for name, n in _lacking(holders, shares(peers, self.partitions)) for _ in range(n)
        ]
        for partition in sorted(self.held):
            lease = self.lease_key(partition)
            handed = False
            if lacking:
                successor = lacking.pop(0)
                args: list[str | int] = [
                    self.holder,
                    successor,
                    self.ttl_ms,
                    self.members.now_arg(),
                ]
                handed = bool(await self._hand_over(keys=[lease], args=args))
            if not handed:
                await self._release(keys=[lease], args=[self.holder])
        self.held.clear()


def _lacking(holders: dict[int, str | None], share: dict[str, int]) -> list[tuple[str, int]]:
    """The referees below their shares and how many each lacks, by name."""
    counts = dict.fromkeys(share, 0)
    for holder in holders.values():
        if holder in counts:
            counts[holder] += 1
    return [
        (name, share[name] - counts[name]) for name in sorted(share) if counts[name] < share[name]
    ]


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
