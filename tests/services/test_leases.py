"""Partition leases (shared/infra/leases.py): live referees share the partitions fairly, never
two at once, take over a silent peer's after its lease runs out, and a clean stop hands its
partitions over at once. On fakeredis, and on the real Redis when REDIS_URL is set."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from shared.infra.autopipe import autopipe
from shared.infra.keys import Keys
from shared.infra.leases import PartitionLeases
from tests.services.conftest import Stack, delete_prefixed, redis_client

PARTITIONS = 8
TTL_MS = 400


@pytest.fixture
async def redis() -> AsyncIterator[tuple[Any, Keys]]:
    client = redis_client()
    keys = Keys(f"test-leases-{uuid.uuid4().hex[:8]}:")
    try:
        yield autopipe(client), keys
    finally:
        await delete_prefixed(client, keys.prefix)
        await client.aclose()


def holders(redis: tuple[Any, Keys], names: list[str]) -> list[PartitionLeases]:
    client, keys = redis
    return [PartitionLeases(client, keys, name, PARTITIONS, TTL_MS) for name in names]


async def settle(leases: list[PartitionLeases], rounds: int = 3) -> list[set[int]]:
    for _ in range(rounds):
        for lease in leases:
            await lease.refresh()
    return [set(lease.held) for lease in leases]


def disjoint(held: list[set[int]]) -> bool:
    return sum(len(h) for h in held) == len(set().union(*held))


async def test_one_referee_holds_every_partition(redis: tuple[Any, Keys]) -> None:
    (only,) = holders(redis, ["a"])
    assert await only.refresh() == set(range(PARTITIONS))


async def test_live_referees_share_fairly_and_never_overlap(redis: tuple[Any, Keys]) -> None:
    a, b = holders(redis, ["a", "b"])
    assert await a.refresh() == set(range(PARTITIONS))
    held = await settle([a, b])  # b joins: a gives back its share above half
    assert sorted(map(len, held)) == [4, 4] and disjoint(held)
    (c,) = holders(redis, ["c"])
    held = await settle([a, b, c])
    assert sorted(map(len, held)) == [2, 3, 3] and disjoint(held)
    assert set().union(*held) == set(range(PARTITIONS))


async def test_a_silent_referees_partitions_are_taken_after_its_lease(
    redis: tuple[Any, Keys],
) -> None:
    a, b = holders(redis, ["a", "b"])
    held = await settle([a, b])
    lost = held[1]
    await a.refresh()
    assert a.held == held[0], "b's leases still run: a may not take them"
    await asyncio.sleep(TTL_MS / 1000 + 0.1)  # b stops renewing (frozen, killed)
    assert await a.refresh() == set(range(PARTITIONS))
    assert lost <= a.held
    # b comes back: its renewals fail for what a took, and it shares again from scratch.
    held = await settle([b, a])
    assert sorted(map(len, held)) == [4, 4] and disjoint(held)


async def test_a_clean_stop_hands_over_at_once(redis: tuple[Any, Keys]) -> None:
    a, b = holders(redis, ["a", "b"])
    await settle([a, b])
    await b.give_up()
    assert b.held == set()
    assert await a.refresh() == set(range(PARTITIONS)), "no wait for b's leases to run out"


async def test_two_referees_in_a_stack_split_the_partitions(stack: Stack) -> None:
    second = stack.start_referee("referee-2")
    for _ in range(50):
        first_held, second_held = stack.referee.held, second.held
        if first_held and second_held and not first_held & second_held:
            break
        await asyncio.sleep(0.1)
    assert first_held and second_held and not first_held & second_held
    assert len(first_held | second_held) == stack.settings.partitions
