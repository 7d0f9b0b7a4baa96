"""The store's raw records (what the gateway sends its worker processes to decode) are the very
events ``read`` gives, page for page."""

from __future__ import annotations

import fakeredis
import pytest

from shared.infra import codec
from shared.infra.store.redis import PAGE, RedisEventStore
from shared.infra.stored import NewEvent


async def test_records_decode_to_the_events_read() -> None:
    store = RedisEventStore(fakeredis.aioredis.FakeRedis(), "rec:")
    count = PAGE + 20  # more than one page of XRANGE
    for n in range(count):
        await store.append("g-records", [NewEvent("Noted", {"n": n})], n, command_id=f"c{n}")
    records = await store.records("g-records")
    assert len(records) == count
    decoded = [codec.decode(r, store.upcasters) for r in records]
    assert decoded == await store.read("g-records")
    some = await store.records("g-records", after=3, limit=PAGE)
    assert [codec.decode(r).version for r in some] == list(range(4, 4 + PAGE))
    assert await store.records("g-records", limit=0) == []
    assert await store.records("g-none") == []
    with pytest.raises(ValueError, match="after"):
        await store.records("g-records", after=-1)
