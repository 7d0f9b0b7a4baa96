"""Even and stable leases (shared/infra/leases.py), on a stepped clock: shares differ by at most
one partition; while referees come and go each partition moves at most once per change of the
members, only from a referee above its share to one below; its lease names nobody only when
its referee died without handing it over, and a hand-over pauses its reading for at most one
refresh (the successor acts on it at its next look); no partition ever has two holders acting
at once, and whoever acts on one holds its lease."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from shared.infra.autopipe import autopipe
from shared.infra.keys import Keys
from shared.infra.leases import PartitionLeases, shares
from tests.services.conftest import delete_prefixed, redis_client

TTL_MS = 3000
STEP = 1.0  # seconds between two refreshes of every referee (a third of the lease)


class SteppedTime:
    """The leases' time, moved by the test alone (started at the wall clock: Redis's own key
    expiry must never come before the leases' time does)."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@dataclass
class Fleet:
    """Referees refreshing once per step, in a shuffled order; what the steps saw."""

    client: Any
    keys: Keys
    partitions: int
    time: SteppedTime = field(default_factory=SteppedTime)
    running: dict[str, PartitionLeases] = field(default_factory=dict)
    owner: dict[int, str] = field(default_factory=dict)  # every partition's last acting holder
    moves: dict[int, int] = field(default_factory=dict)  # since the last change of members
    handovers: int = 0
    moved: dict[int, int] = field(default_factory=dict)  # every move, partition by partition
    unowned: dict[int, int] = field(default_factory=dict)  # partition -> steps leased to none
    paused: dict[int, int] = field(default_factory=dict)  # partition -> steps nobody acted
    order: random.Random = field(default_factory=lambda: random.Random(7))

    def join(self, name: str) -> None:
        self.running[name] = PartitionLeases(
            self.client, self.keys, name, self.partitions, TTL_MS, self.time
        )
        self.moves.clear()

    async def leave(self, name: str) -> None:
        await self.running.pop(name).give_up()
        self.moves.clear()

    def die(self, name: str) -> None:
        self.running.pop(name)  # no hand-over: its leases run out
        self.moves.clear()

    async def step(self) -> None:
        self.time.now += STEP
        names = sorted(self.running)
        self.order.shuffle(names)
        for name in names:
            await self.running[name].refresh()
        await self.check()

    async def check(self) -> None:
        acting: dict[int, list[str]] = {}
        for name, leases in self.running.items():
            for partition in leases.held:
                acting.setdefault(partition, []).append(name)
        observer = PartitionLeases(self.client, self.keys, "-", self.partitions, TTL_MS, self.time)
        leased = await observer.look(range(self.partitions))  # the leases' holders, renewing none
        for partition in range(self.partitions):
            holders = acting.get(partition, [])
            assert len(holders) <= 1, f"partition {partition} held by {holders}"
            if leased[partition] is None:
                self.unowned[partition] = self.unowned.get(partition, 0) + 1
            if not holders:
                self.paused[partition] = self.paused.get(partition, 0) + 1
                continue
            (holder,) = holders
            assert leased[partition] == holder, (partition, leased[partition], holder)
            if self.owner.get(partition, holder) != holder:
                self.handovers += 1
                self.moves[partition] = self.moves.get(partition, 0) + 1
                self.moved[partition] = self.moved.get(partition, 0) + 1
                assert self.moves[partition] <= 1, f"partition {partition} moved twice"
            self.owner[partition] = holder

    def held(self) -> dict[str, int]:
        return {name: len(leases.held) for name, leases in self.running.items()}

    async def converge(self, steps: int = 6) -> None:
        for _ in range(steps):
            await self.step()
        counts = self.held()
        assert sum(counts.values()) == self.partitions, counts
        assert max(counts.values()) - min(counts.values()) <= 1, counts
        assert counts == shares(list(counts), self.partitions)


@pytest.fixture
async def redis() -> AsyncIterator[tuple[Any, Keys]]:
    client = redis_client()
    keys = Keys(f"test-balance-{uuid.uuid4().hex[:8]}:")
    try:
        yield autopipe(client), keys
    finally:
        await delete_prefixed(client, keys.prefix)
        await client.aclose()


def test_shares_differ_by_at_most_one_and_cover_every_partition() -> None:
    assert shares(["r2", "r1", "r3", "r4", "r5"], 32) == {
        "r1": 7,
        "r2": 7,
        "r3": 6,
        "r4": 6,
        "r5": 6,
    }
    for live in range(1, 9):
        for partitions in (1, 7, 32):
            share = shares([f"r{n}" for n in range(live)], partitions)
            assert sum(share.values()) == partitions
            assert max(share.values()) - min(share.values()) <= 1


@pytest.mark.parametrize("partitions", [1, 7, 32])
async def test_every_fleet_size_converges_to_even_shares(
    redis: tuple[Any, Keys], partitions: int
) -> None:
    client, keys = redis
    for live in range(1, 9):
        fleet = Fleet(client, Keys(f"{keys.prefix}{live}:"), partitions)
        for n in range(live):
            fleet.join(f"referee-{n}")
        await fleet.converge()


async def test_scaling_up_and_down_moves_each_partition_once_per_change(
    redis: tuple[Any, Keys],
) -> None:
    client, keys = redis
    fleet = Fleet(client, keys, 32)
    fleet.join("referee-0")
    await fleet.converge()
    assert fleet.held() == {"referee-0": 32}
    for n in range(1, 6):  # 1 -> 6, one at a time
        counts = {**fleet.held(), f"referee-{n}": 0}
        # The fewest moves that even the shares: what the referees below their new share lack.
        needed = sum(max(0, s - counts[name]) for name, s in shares(list(counts), 32).items())
        before = fleet.handovers
        fleet.join(f"referee-{n}")
        await fleet.converge()
        assert fleet.handovers - before == needed, (n, fleet.handovers - before, needed)
    assert fleet.unowned == {}, "joins hand over in place: no lease is ever free"
    # A partition handed over is read by its successor a step later, and only then.
    assert all(steps <= fleet.moved.get(p, 0) for p, steps in fleet.paused.items())

    # 6 -> 4 by clean stops: handed over, nothing unowned.
    await fleet.leave("referee-5")
    await fleet.converge()
    await fleet.leave("referee-0")
    await fleet.converge()
    assert fleet.unowned == {}
    assert all(steps <= fleet.moved.get(p, 0) for p, steps in fleet.paused.items())

    fleet.paused.clear()

    # 4 -> 2 by deaths: only the dead ones' partitions wait, for about a lease.
    dead = {p for name in ("referee-1", "referee-3") for p in fleet.running[name].held}
    fleet.die("referee-1")
    fleet.die("referee-3")
    await fleet.converge(8)
    assert set(fleet.unowned) == dead
    assert set(fleet.paused) == dead
    limit = TTL_MS / 1000 / STEP + 2  # the lease runs out, the members forget the dead one
    assert max(fleet.unowned.values()) <= limit, fleet.unowned
    assert sorted(fleet.held()) == ["referee-2", "referee-4"]


async def test_a_stable_fleet_moves_nothing(redis: tuple[Any, Keys]) -> None:
    client, keys = redis
    fleet = Fleet(client, keys, 32)
    for n in range(5):
        fleet.join(f"referee-{n}")
    await fleet.converge()
    assert sorted(fleet.held().values()) == [6, 6, 6, 7, 7]
    moved = fleet.handovers
    for _ in range(20):
        await fleet.step()
    assert fleet.handovers == moved and fleet.unowned == {}
    assert all(steps <= fleet.moved.get(p, 0) for p, steps in fleet.paused.items())


async def test_surplus_is_handed_only_to_a_peer_heard_from(redis: tuple[Any, Keys]) -> None:
    client, keys = redis
    fleet = Fleet(client, keys, 8)
    fleet.join("a")
    await fleet.converge()
    # b heartbeats once, then falls silent: a keeps everything until b is counted dead.
    b = PartitionLeases(client, keys, "b", 8, TTL_MS, fleet.time)
    await b.members.beat()
    fleet.time.now += STEP  # b silent for more than half a lease at a's next refresh
    for _ in range(3):
        await fleet.step()
        assert fleet.held() == {"a": 8}
    assert fleet.handovers == 0
    # Had b been heard from, it would have had its share at once.
    await b.members.beat()
    await fleet.step()
    assert fleet.held() == {"a": 4} and fleet.handovers == 0
    assert await b.refresh() == {4, 5, 6, 7}
