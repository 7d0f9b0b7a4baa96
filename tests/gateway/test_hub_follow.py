"""The gateway's feed followers: one read of every partition on one Redis, one per partition on
a cluster, each waiting as long as its plan allows (news wakes either at once)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from services.gateway.hub import FOLLOW_ALONE_BLOCK_MS, FOLLOW_BLOCK_MS, Hub
from shared.infra.bus import Bus
from shared.infra.keys import Keys


class ReadRecorder:
    """A client whose reads record the streams and block they were asked for."""

    def __init__(self) -> None:
        self.reads: list[tuple[tuple[str, ...], int | None]] = []

    async def xrevrange(self, *args: Any, **kwargs: Any) -> list[Any]:
        return []

    async def xread(self, streams: dict[str, Any], count: int, block: int | None) -> list[Any]:
        self.reads.append((tuple(streams), block))
        await asyncio.sleep(0.001)
        return []


async def _nothing(*args: Any) -> None:
    return None


@pytest.mark.parametrize(
    ("alone", "block"), [(False, FOLLOW_BLOCK_MS), (True, FOLLOW_ALONE_BLOCK_MS)]
)
async def test_each_plan_of_reads_waits_its_own_block(
    monkeypatch: pytest.MonkeyPatch, alone: bool, block: int
) -> None:
    client = ReadRecorder()
    bus = Bus(client, Keys("t:"), 4)  # type: ignore[arg-type]
    streams = bus.feed_streams()
    plan = [[s] for s in streams] if alone else [streams]
    monkeypatch.setattr("services.gateway.hub.read_plan", lambda client, names: plan)
    hub = Hub(bus, _nothing, _nothing)
    await hub.start()
    while len({names for names, _ in client.reads}) < len(plan):
        await asyncio.sleep(0.001)
    await hub.stop()
    assert {names for names, _ in client.reads} == {tuple(group) for group in plan}
    assert {wait for _, wait in client.reads} == {block}
