"""The worker pool on real processes: it runs jobs elsewhere, kills and replaces a worker past
its budget, refuses when every worker and every queue place is taken, survives a worker's crash,
and leaves no process behind when stopped (nor when its parent is killed)."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from shared.infra.workpool import (
    JobError,
    JobTimeout,
    PoolBusy,
    PoolClosed,
    WorkerLost,
    WorkPool,
)
from tests.edge import jobs
from tests.servers import until

SAFETY = 120.0  # a hang fails the test; never what is asserted

MakePool = Callable[..., Awaitable[WorkPool]]


def alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def metric(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


@pytest.fixture
async def make_pool() -> AsyncIterator[MakePool]:
    pools: list[WorkPool] = []

    async def make(size: int = 1, queue: int = 2, **kwargs: Any) -> WorkPool:
        pool = WorkPool(size, queue, registry=CollectorRegistry(), namespace="test_pool", **kwargs)
        await pool.start()
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        await pool.stop()


def registry_of(pool: WorkPool) -> CollectorRegistry:
    assert pool.metrics.registry is not None
    return pool.metrics.registry


async def test_a_job_runs_in_another_process_and_its_answer_comes_back(
    make_pool: MakePool,
) -> None:
    pool = await make_pool(size=2)
    assert pool.pids() == []  # no worker before the first job
    async with asyncio.timeout(SAFETY):
        value = {"cards": [1, 2, 3], "text": "é", "big": 2**70}
        assert await pool.run("echo", jobs.echo, value, budget=SAFETY) == value
        worker = await pool.run("pid", jobs.pid, budget=SAFETY)
    assert worker != os.getpid() and worker in pool.pids()
    assert len(pool.pids()) == 2  # the pool is kept at its size once in use
    assert metric(registry_of(pool), "test_pool_jobs_total", job="echo", outcome="done") == 1


async def test_workers_run_below_their_parents_cpu_priority(make_pool: MakePool) -> None:
    ours = os.nice(0)
    pool = await make_pool(size=1, niceness=7)
    async with asyncio.timeout(SAFETY):
        assert await pool.run("nice", jobs.niceness, budget=SAFETY) == min(19, ours + 7)
    plain = await make_pool(size=1)
    async with asyncio.timeout(SAFETY):
        assert await plain.run("nice", jobs.niceness, budget=SAFETY) == ours


async def test_a_job_past_its_budget_has_its_worker_killed_and_replaced(
    make_pool: MakePool, tmp_path: Path
) -> None:
    pool = await make_pool(size=1)
    for job in (jobs.stall, jobs.spin):  # asleep, and busy holding its process's GIL
        first = await pool.run("pid", jobs.pid, budget=SAFETY)
        marker = tmp_path / f"{job.__name__}.started"
        with pytest.raises(JobTimeout, match=r"budget of 2 s"):
            async with asyncio.timeout(SAFETY):
                await pool.run("slow", job, str(marker), budget=2)
        assert marker.read_text() == str(first)  # it did run, in that worker
        gone = "the worker past its budget is gone"
        await until(lambda: not alive(first), SAFETY, every=0.01, message=gone)  # noqa: B023
        async with asyncio.timeout(SAFETY):
            second = await pool.run("pid", jobs.pid, budget=SAFETY)
        assert second != first and pool.pids() == [second]
    registry = registry_of(pool)
    assert metric(registry, "test_pool_jobs_total", job="slow", outcome="timeout") == 2
    assert metric(registry, "test_pool_workers_started_total") == 3


async def test_a_full_pool_refuses_at_once_and_the_queue_drains_in_order(
    make_pool: MakePool, tmp_path: Path
) -> None:
    pool = await make_pool(size=1, queue=1)
    go = tmp_path / "go"
    running = asyncio.create_task(pool.run("hold", jobs.wait_for, str(go), budget=SAFETY))
    await until(
        lambda: pool.running() == 1,
        SAFETY,
        every=0.01,
        message="the first job holds the only worker",
    )
    queued = asyncio.create_task(pool.run("echo", jobs.echo, "second", budget=SAFETY))
    await until(lambda: pool.waiting() == 1, SAFETY, every=0.01, message="the second job waits")
    with pytest.raises(PoolBusy, match="busy"):
        await pool.run("echo", jobs.echo, "third", budget=SAFETY)  # refused, not queued
    assert not running.done() and not queued.done()
    go.write_text("done")
    async with asyncio.timeout(SAFETY):
        assert await running == "done"
        assert await queued == "second"
    registry = registry_of(pool)
    assert metric(registry, "test_pool_jobs_total", job="echo", outcome="busy") == 1
    assert metric(registry, "test_pool_jobs_total", job="echo", outcome="done") == 1


async def test_the_event_loop_runs_while_a_job_holds_its_worker(
    make_pool: MakePool, tmp_path: Path
) -> None:
    pool = await make_pool(size=1)
    marker = tmp_path / "spin.started"
    job = asyncio.create_task(pool.run("spin", jobs.spin, str(marker), budget=SAFETY))
    await until(marker.exists, SAFETY, every=0.01, message="the job spins")
    ticks = 0
    for _ in range(20):  # the loop goes round while the job still runs
        await asyncio.sleep(0)
        ticks += 1
    assert ticks == 20 and not job.done()
    job.cancel()  # the caller leaves; the pool ends the job only with its budget, or at stop


async def test_a_worker_that_crashes_is_replaced(make_pool: MakePool) -> None:
    pool = await make_pool(size=2, queue=2)
    async with asyncio.timeout(SAFETY):
        await pool.run("pid", jobs.pid, budget=SAFETY)
        before = set(pool.pids())
        with pytest.raises(WorkerLost, match="SIGKILL"):
            await pool.run("crash", jobs.crash, budget=SAFETY)
        await until(
            lambda: len(pool.pids()) == 2,
            SAFETY,
            every=0.01,
            message="a new worker takes the dead one's place",
        )
        assert len(before & set(pool.pids())) == 1
        # An idle worker killed from outside is noticed and replaced too.
        (victim,) = before & set(pool.pids())
        os.kill(victim, signal.SIGKILL)
        await until(
            lambda: victim not in pool.pids() and len(pool.pids()) == 2,
            SAFETY,
            every=0.01,
            message="replaced",
        )
        asks = [pool.run("echo", jobs.echo, n, budget=SAFETY) for n in range(4)]
        answers = await asyncio.gather(*asks)
    assert answers == [0, 1, 2, 3]
    assert metric(registry_of(pool), "test_pool_jobs_total", job="crash", outcome="lost") == 1


async def test_what_a_job_raises_comes_back_and_the_worker_stays(make_pool: MakePool) -> None:
    pool = await make_pool(size=1)
    async with asyncio.timeout(SAFETY):
        first = await pool.run("pid", jobs.pid, budget=SAFETY)
        with pytest.raises(jobs.Refused, match="no such turn"):
            await pool.run("refuse", jobs.refuse, "no such turn", budget=SAFETY)
        with pytest.raises(JobError, match="Stubborn: a/b"):
            await pool.run("stubborn", jobs.stubborn, budget=SAFETY)
        with pytest.raises(JobError, match="lock"):
            await pool.run("unpicklable", jobs.unpicklable, budget=SAFETY)
        with pytest.raises(TypeError, match="cannot be sent"):
            await pool.run("lambda", lambda: 1, budget=SAFETY)  # cannot be sent: refused here
        assert await pool.run("pid", jobs.pid, budget=SAFETY) == first
    assert metric(registry_of(pool), "test_pool_jobs_total", job="refuse", outcome="failed") == 1


async def test_no_worker_can_start(make_pool: MakePool) -> None:
    pool = await make_pool(size=1, initializer=jobs.boom_at_start)
    with pytest.raises(WorkerLost, match="no worker could be started"):
        async with asyncio.timeout(SAFETY):
            await pool.run("echo", jobs.echo, 1, budget=SAFETY)
    await until(lambda: not pool.pids(), SAFETY, every=0.01, message="the failed worker is gone")


async def test_stop_ends_every_worker_and_fails_what_runs(
    make_pool: MakePool, tmp_path: Path
) -> None:
    pool = await make_pool(size=2, queue=1)
    await pool.start(warm=True)
    await until(
        lambda: len(pool.pids()) == 2 and pool.running() == 0,
        SAFETY,
        every=0.01,
        message="both workers up",
    )
    marker = tmp_path / "stall.started"
    held = asyncio.create_task(pool.run("stall", jobs.stall, str(marker), budget=SAFETY))
    other = asyncio.create_task(pool.run("stall", jobs.stall, str(tmp_path / "2"), budget=SAFETY))
    await until(lambda: pool.running() == 2, SAFETY, every=0.01, message="both workers busy")
    waiting = asyncio.create_task(pool.run("echo", jobs.echo, 1, budget=SAFETY))
    await until(lambda: pool.waiting() == 1, SAFETY, every=0.01, message="a job waits")
    pids = pool.pids()
    async with asyncio.timeout(SAFETY):
        await pool.stop()
    for task in (held, other, waiting):
        with pytest.raises(PoolClosed):
            await task
    assert pool.pids() == []
    assert not any(alive(pid) for pid in pids)  # reaped, not zombies
    assert multiprocessing.active_children() == []
    with pytest.raises(PoolClosed):
        await pool.run("echo", jobs.echo, 1, budget=SAFETY)


def test_workers_die_with_their_parent(tmp_path: Path) -> None:
    """A parent killed outright (no stop, no clean-up) takes its workers along, even one in a
    job that would run for an hour."""
    marker = tmp_path / "stall.started"
    script = textwrap.dedent(
        f"""
        import asyncio, time
        from shared.infra.workpool import WorkPool
        from tests.edge import jobs

        async def main():
            pool = WorkPool(2, 1)
            await pool.start(warm=True)
            asyncio.ensure_future(pool.run("stall", jobs.stall, {str(marker)!r}, budget=3600))
            while len(pool.pids()) < 2 or pool.running() < 1:
                await asyncio.sleep(0.01)
            print(" ".join(map(str, pool.pids())), flush=True)
            await asyncio.sleep(3600)

        asyncio.run(main())
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        pids = [int(p) for p in parent.stdout.readline().split()]
        assert len(pids) == 2
        asyncio.run(until(marker.exists, SAFETY, every=0.01, message="the job runs"))
        parent.kill()
        parent.wait()
        asyncio.run(
            until(
                lambda: not any(alive(p) for p in pids),
                SAFETY,
                every=0.01,
                message="the workers died",
            )
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            parent.kill()
        parent.wait()


async def test_a_wait_for_a_busy_worker_comes_out_of_the_callers_budget(
    make_pool: MakePool, tmp_path: Path
) -> None:
    pool = await make_pool(size=1, queue=2)
    go = tmp_path / "go"
    held = asyncio.create_task(pool.run("hold", jobs.wait_for, str(go), budget=SAFETY))
    await until(lambda: pool.running() == 1, SAFETY, every=0.01, message="the worker is held")
    with pytest.raises(PoolBusy, match=r"no worker was free within the 0\.2 s budget"):
        async with asyncio.timeout(SAFETY):  # the budget ends it; this only stops a hang
            await pool.run("echo", jobs.echo, 1, budget=0.2)
    assert not held.done()  # the job that holds the worker is not disturbed
    assert pool.waiting() == 0  # the refused job left the queue
    go.write_text("done")
    async with asyncio.timeout(SAFETY):
        assert await held == "done"
        assert await pool.run("echo", jobs.echo, 2, budget=SAFETY) == 2  # the worker is free
    assert metric(registry_of(pool), "test_pool_jobs_total", job="echo", outcome="busy") == 1


async def test_a_job_that_waited_is_answered_within_the_callers_budget_and_runs_on_unanswered(
    make_pool: MakePool, tmp_path: Path
) -> None:
    pool = await make_pool(size=1, queue=2)
    go, started = tmp_path / "go", tmp_path / "started"
    held = asyncio.create_task(pool.run("hold", jobs.wait_for, str(go), budget=SAFETY))
    await until(lambda: pool.running() == 1, SAFETY, every=0.01, message="the worker is held")
    late = asyncio.create_task(pool.run("stall", jobs.stall, str(started), budget=2.0))
    await until(lambda: pool.waiting() == 1, SAFETY, every=0.01, message="the stall waits")
    await asyncio.sleep(0.5)  # a wait well past WAIT_SLACK (and well within the budget)
    go.write_text("done")
    async with asyncio.timeout(SAFETY):
        assert await held == "done"
        with pytest.raises(PoolBusy, match="left stall too little of its 2 s budget"):
            await late
    assert started.exists() and pool.running() == 1  # it runs on, in its worker, unanswered
    registry = registry_of(pool)
    assert metric(registry, "test_pool_jobs_total", job="stall", outcome="timeout") == 0
    await until(  # and is stopped at the end of its own budget, as any job
        lambda: metric(registry, "test_pool_jobs_total", job="stall", outcome="timeout") == 1,
        SAFETY,
        every=0.01,
        message="the stall is stopped past its budget",
    )


async def test_a_wait_for_workers_still_starting_is_not_cut_by_the_budget(
    make_pool: MakePool,
) -> None:
    pool = await make_pool(size=1, queue=2, initializer=jobs.slow_start)
    async with asyncio.timeout(SAFETY):  # the worker takes a second to start: twice the budget
        assert await pool.run("echo", jobs.echo, "worked out", budget=0.5) == "worked out"
