"""What the service could not serve costs its client nothing of its hint or replay allowance: a
503 ``solver_busy`` (every worker busy, a worker lost, the address's share of the pool taken)
gives back the pass the route's limit took, in Redis and in the gateway's copy, while any answer
to the question (a replay, a refusal of it, one that ran past its budget) counts.

The pool is a stand-in that refuses as told or runs each job in the test's own process, and the
limits' clock stands still: what passes is counted, never timed."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from services.gateway.ratelimit import Limits
from services.gateway.routes import replay as replay_route
from services.gateway.state import GATEWAY
from shared.infra.keys import Keys
from shared.infra.settings import Settings
from shared.infra.workpool import JobTimeout, PoolBusy, PoolError, WorkerLost
from tests.gateway.api import Reply, check_error
from tests.gateway.conftest import LimitClock, MakeStack, Stack
from tests.gateway.test_limits import limited
from tests.servers import until
from tests.services.conftest import delete_prefixed, redis_client

OPERATOR = "operator-token-of-the-test"
ADDRESS = "198.51.100.7"


class Pool:
    """The gateway's worker pool in a test: raises ``refusing`` for every job while it is set,
    else runs the job here once ``free`` is set."""

    def __init__(self) -> None:
        self.refusing: PoolError | None = None
        self.free = asyncio.Event()
        self.free.set()
        self.running = 0

    async def run(self, job: str, fn: Any, *args: Any, budget: float) -> Any:
        if self.refusing is not None:
            raise self.refusing
        self.running += 1
        try:
            await self.free.wait()
            return fn(*args)
        finally:
            self.running -= 1


def pool_of(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> Pool:
    pool = Pool()
    monkeypatch.setattr(stack.server.app[GATEWAY].answers.pool, "run", pool.run)
    return pool


def busy(reply: Reply) -> bool:
    check_error(reply.body, reply.body["error"]["code"])
    return reply.status == 503 and reply.body["error"]["code"] == "solver_busy"


async def test_replays_and_exports_the_pool_could_not_work_out_cost_no_allowance(
    make_stack: MakeStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replays, exports and turn pictures share the replay allowance."""
    stack, _ = await limited(make_stack, limit_replay_per_minute=2, operator_token=OPERATOR)
    api = stack.api
    pool = pool_of(stack, monkeypatch)
    game_id, _, _ = await api.new_game("robbers", 2)
    replay, export = f"/api/games/{game_id}/replay?turn=1", f"/api/games/{game_id}/export"
    picture = f"/api/games/{game_id}/turns/1.svg"
    pool.refusing = PoolBusy("no worker was free within the 5 s budget")
    for path in (replay, replay, replay, export, export, picture, picture):
        assert busy(await api.call("GET", path, token=OPERATOR))
    pool.refusing = WorkerLost("the worker running replay stopped (killed)")
    assert busy(await api.call("GET", replay))
    pool.refusing = None
    assert (await api.call("GET", replay)).status == 200  # the whole allowance is left
    pool.refusing = JobTimeout("export ran past its budget of 5 s; its worker was stopped")
    late = await api.call("GET", export, token=OPERATOR)
    assert late.status == 503, late  # worked out for the whole budget: it counts
    check_error(late.body, "export_timeout")
    refused = await api.call("GET", replay)
    assert refused.status == 429 and refused.headers["Retry-After"] == "30", refused


async def test_a_page_asking_several_turns_at_once_does_not_lock_itself_out(
    make_stack: MakeStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack, _ = await limited(make_stack, limit_replay_per_minute=3, solver_per_address=1)
    api = stack.api
    pool = pool_of(stack, monkeypatch)
    game_id, _, _ = await api.new_game("robbers", 2)

    def replay(version: int) -> asyncio.Task[Reply]:
        return asyncio.create_task(
            api.call("GET", f"/api/games/{game_id}/replay?version={version}")
        )

    pool.free.clear()
    page = {version: replay(version) for version in (1, 2, 3)}
    await until(lambda: pool.running == 1 and sum(t.done() for t in page.values()) == 2, 30)
    refused = [version for version, task in page.items() if task.done()]
    for version in refused:  # the address's share of the pool was taken by the first
        reply = page[version].result()
        assert busy(reply) and "this address already has 1" in reply.body["error"]["message"]
    pool.free.set()
    (worked,) = (task for task in page.values() if not task.done())
    assert (await worked).status == 200
    for version in refused:  # the page asks again for what it was refused: its allowance is there
        assert (await replay(version)).status == 200
    over = await replay(4)
    assert over.status == 429 and over.headers["Retry-After"] == "20", over


class Holds:
    """The tarpit's sleep in a test: records each hold and returns at once."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


async def test_a_hint_the_pool_could_not_work_out_costs_the_seat_no_hint(
    make_stack: MakeStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each 503 is held before it is sent, as a 429 is: a client looping on them waits."""
    stack, _ = await limited(make_stack, limit_hint_per_minute=1, refusal_delay=3)
    holds = stack.server.app[GATEWAY].tarpit.sleep = Holds()
    api = stack.api
    pool = pool_of(stack, monkeypatch)
    game_id, _, tokens = await api.new_game("rummikub", 2, {"opening_points": 0})
    path = f"/api/games/{game_id}/hint"
    pool.refusing = PoolBusy("no worker was free within the 2 s budget")
    for _ in range(3):
        assert busy(await api.call("GET", path, token=tokens[0]))
    assert holds.seconds == [2, 2, 2]  # the delay, but no longer than their Retry-After
    pool.refusing = None
    assert (await api.call("GET", path, token=tokens[0])).status == 200  # never held
    refused = await api.call("GET", path + "?goal=points", token=tokens[0])
    assert refused.status == 429 and refused.headers["Retry-After"] == "60", refused
    assert holds.seconds == [2, 2, 2, 3]


async def test_a_replay_whose_log_could_not_be_read_costs_no_allowance(
    make_stack: MakeStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 500 (the game's log failed to read) is the service's failure, not an answer."""
    stack, _ = await limited(make_stack, limit_replay_per_minute=1)
    api = stack.api
    pool_of(stack, monkeypatch)
    game_id, _, _ = await api.new_game("robbers", 2)
    path = f"/api/games/{game_id}/replay?turn=1"
    read = replay_route._records
    failures = [RuntimeError("the log read failed")] * 2

    async def records(*args: Any) -> Any:
        if failures:
            raise failures.pop()
        return await read(*args)

    monkeypatch.setattr(replay_route, "_records", records)
    for _ in range(2):
        failed = await api.call("GET", path)
        assert failed.status == 500, failed
        check_error(failed.body, "internal")
    assert (await api.call("GET", path)).status == 200  # the one pass a minute is still there
    refused = await api.call("GET", path.replace("turn=1", "turn=2"))
    assert refused.status == 429, refused


async def test_a_pass_given_back_empties_the_shared_bucket_never_past_full() -> None:
    client = redis_client()  # the real Redis at REDIS_URL when it is set
    settings = Settings(prefix=f"lim{uuid.uuid4().hex[:8]}:", limit_replay_per_minute=3)
    clock = LimitClock()
    one, two = Limits(client, settings, clock), Limits(client, settings, clock)
    key = Keys(settings.prefix).limit("replay", ADDRESS)
    try:
        taken = [await one.take(one.replay, ADDRESS) for _ in range(3)]
        assert await one.wait(one.replay, ADDRESS) == 20  # three a minute: the bucket is empty
        assert await two.wait(two.replay, ADDRESS) == 20
        await taken[0].give_back()
        assert 0 < await client.pttl(key) <= 40_000  # full again 20 s sooner: the key goes then
        assert await one.wait(one.replay, ADDRESS) == 0  # its copy emptied as Redis was
        assert await one.wait(one.replay, ADDRESS) == 20  # one pass back, not more
        clock.advance(20)  # what Redis told the other gateway holds no longer than it said
        assert await two.wait(two.replay, ADDRESS) == 0
        clock.advance(60)  # full again: a pass given back now makes no room past the burst
        taken = [await one.take(one.replay, ADDRESS) for _ in range(2)]
        clock.advance(60)
        await taken[0].give_back()
        assert await client.exists(key) == 0
        assert [await two.wait(two.replay, ADDRESS) for _ in range(4)] == [0, 0, 0, 20]
    finally:
        await delete_prefixed(client, settings.prefix)
        await client.aclose()


async def test_a_limit_that_is_off_takes_nothing_to_give_back() -> None:
    client = redis_client()
    settings = Settings(prefix=f"lim{uuid.uuid4().hex[:8]}:", limit_replay_per_minute=0)
    limits = Limits(client, settings, LimitClock())
    try:
        assert await limits.take(limits.replay, ADDRESS) is None
        assert await client.keys(f"{settings.prefix}*") == []
    finally:
        await client.aclose()
