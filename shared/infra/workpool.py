"""A bounded pool of worker processes that run CPU-bound jobs for an event loop, each job within a
wall-clock budget.

Why processes: a long computation in the event loop's own process holds the GIL (from a thread
too), and every other request of that process waits for it. Here a job (a picklable function and
its arguments) is sent to an idle worker process over a socket and its result is read back
without blocking the loop. Why the bounds: a job past its budget has its worker killed (the only
way to stop a computation that never looks up) and replaced, so no job holds a worker for longer;
a job that finds every worker busy waits in a queue of ``queue`` places, and one that finds the
queue full is refused at once (:class:`PoolBusy`), so a burst of costly requests cannot pile up
work without end.

Workers are started with ``spawn`` (never a fork of a process running an event loop and its
sockets) when the first job comes, so a process that never runs a job never pays for them; a
worker that dies (killed past its budget, crashed) is replaced at once from then on. A worker
dies with its parent (``PR_SET_PDEATHSIG`` on Linux, and end of input on its socket elsewhere),
and ``stop`` ends every worker and reaps it: nothing outlives the pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import multiprocessing
import os
import pickle
import signal
import socket
import struct
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.context import ForkServerContext, SpawnContext
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar, cast

from prometheus_client import CollectorRegistry, Counter, Gauge

T = TypeVar("T")

_HEADER = struct.Struct("!Q")  # the length of the pickle that follows
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
START_METHODS = ("spawn", "forkserver")
WAIT_SLACK = 0.1  # seconds past its budget a caller may wait, a wait for a worker included
START_TRIES = 3  # workers that fail to start in a row before the pool waits for the next job


class PoolError(Exception):
    """The pool could not run the job (busy, past its budget, lost worker, stopped)."""


class PoolBusy(PoolError):
    """Every worker is busy and the wait queue is full: try again later."""


class JobTimeout(PoolError):
    """The job ran past its budget; its worker was killed (and is being replaced)."""


class WorkerLost(PoolError):
    """The worker running the job died (a crash, a kill), or no worker could be started."""


class PoolClosed(PoolError):
    """The pool has been stopped."""


class JobError(Exception):
    """The job raised an exception that could not travel back as itself (its type and text)."""


class PoolMetrics:
    """What an operator watches: jobs by outcome, workers started, busy workers, waiting jobs."""

    def __init__(self, registry: CollectorRegistry | None, namespace: str) -> None:
        self.registry = registry
        self.jobs = Counter(
            f"{namespace}_jobs_total",
            "Jobs by name and outcome (done, failed, timeout, lost, busy, closed)",
            ["job", "outcome"],
            registry=registry,
        )
        self.started = Counter(
            f"{namespace}_workers_started_total",
            "Worker processes started (the first ones and every replacement)",
            registry=registry,
        )
        self.busy = Gauge(
            f"{namespace}_busy_workers", "Workers running a job now", registry=registry
        )
        self.waiting = Gauge(
            f"{namespace}_waiting_jobs", "Jobs waiting for a worker now", registry=registry
        )


@dataclass(eq=False)
class _Worker:
    """One worker process and the parent's end of its socket."""

    process: BaseProcess
    sock: socket.socket
    exited: asyncio.Future[None]
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    busy: bool = False
    retired: bool = False
    pid: int = 0
    exitcode: int | None = None  # once ``exited`` is done


class WorkPool:
    """``size`` worker processes and a wait queue of ``queue`` places; ``await run(...)`` runs a
    job in one of them. ``initializer`` (a picklable function) runs once in every worker before
    it takes jobs: imports and set-up that no job's budget should pay for."""

    def __init__(
        self,
        size: int,
        queue: int,
        *,
        initializer: Callable[[], object] | None = None,
        start_method: str = "spawn",
        start_seconds: float = 120.0,
        niceness: int = 0,
        registry: CollectorRegistry | None = None,
        namespace: str = "workpool",
    ) -> None:
        if size < 1:
            raise ValueError(f"a pool needs at least one worker, not {size}")
        if queue < 0:
            raise ValueError(f"the wait queue cannot have {queue} places")
        if start_method not in START_METHODS:
            raise ValueError(f"start method {start_method!r}; allowed: {', '.join(START_METHODS)}")
        self.size = size
        self.queue = queue
        self.start_seconds = start_seconds
        self.niceness = niceness
        self.metrics = PoolMetrics(registry, namespace)
        self._context: SpawnContext | ForkServerContext = (
            multiprocessing.get_context("spawn")
            if start_method == "spawn"
            else multiprocessing.get_context("forkserver")
        )
        self._initializer = initializer
        self._workers: list[_Worker] = []  # in the pool: starting, idle or busy
        self._living: set[_Worker] = set()  # every process not yet reaped (retired ones too)
        self._idle: deque[_Worker] = deque()
        self._waiters: deque[asyncio.Future[_Worker]] = deque()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._start_failures = 0  # in a row
        self._warm = False  # a job has come: keep ``size`` workers from now on
        self._closed = False

    # --- what callers see ----------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def pids(self) -> list[int]:
        """The process ids of the live workers (starting, idle or busy)."""
        return [w.pid for w in self._workers if w.pid]

    def running(self) -> int:
        """How many jobs are running now."""
        return sum(1 for w in self._workers if w.busy)

    def starting(self) -> int:
        """Workers started but not yet ready for a job."""
        return sum(1 for w in self._workers if not w.busy and w not in self._idle)

    def waiting(self) -> int:
        """How many jobs wait for a worker now."""
        return sum(1 for f in self._waiters if not f.done())

    async def start(self, warm: bool = False) -> None:
        """Open the pool; ``warm``: start the workers now rather than with the first job."""
        if self._closed:
            raise PoolClosed("a stopped pool does not start again")
        if warm:
            self._warm = True
            self._fill()

    async def run(self, job: str, fn: Callable[..., T], *args: Any, budget: float) -> T:
        """``fn(*args)`` in a worker, its result (or the exception it raised) back here.

        The budget is the caller's, a wait for a busy worker included: no answer comes later
        than ``budget`` plus ``WAIT_SLACK`` seconds (wall clock) after the call however busy
        the pool. The job itself has its whole budget from the moment a worker takes it, and
        its worker is stopped only past that: a job that waited, and would answer after the
        caller's time, runs on to its end (or its budget) unanswered, so a busy pool does not
        also lose workers. Not a wait for workers still starting, or none started yet: that
        ends by itself.

        Raises :class:`PoolBusy` at once when every worker is busy and the queue is full, and
        when the wait for a worker left the job too little of its budget (a matter of load,
        not of the job: asked again, it may well be answered); :class:`JobTimeout` when the job
        runs past its whole budget, :class:`WorkerLost` if its worker dies, and
        :class:`PoolClosed` once the pool is stopped. ``job`` names it in the metrics. If the
        caller is cancelled, the job still ends within its budget and its worker is reused."""
        if self._closed:
            raise PoolClosed("the pool is stopped")
        if budget <= 0:
            raise ValueError(f"a job's budget must be positive, not {budget}")
        try:
            payload = pickle.dumps((fn, args), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as err:  # a lambda, a local function, an open file...
            raise TypeError(f"{job} cannot be sent to a worker process: {err}") from err
        loop = asyncio.get_running_loop()
        # Workers all busy: the wait for one comes out of the caller's budget. (Not while
        # workers are starting, or none started yet: that wait ends by itself.)
        bounded = bool(self.pids()) and not self.starting() and not self._idle
        answer_by = loop.time() + budget + WAIT_SLACK if bounded else None
        task: asyncio.Future[Any] | None = None
        try:
            async with asyncio.timeout_at(answer_by) as late:
                worker = await self._acquire(job)
                # The job's own budget runs from here: past it, and only then, its worker is
                # stopped (a worker is not killed because the pool was busy).
                task = asyncio.ensure_future(self._execute(worker, job, payload, budget))
                task.add_done_callback(_retrieve)
                return cast(T, await asyncio.shield(task))
        except TimeoutError:
            if not late.expired():
                raise  # the job's own TimeoutError
            if task is None:
                self.metrics.jobs.labels(job, "busy").inc()
                raise PoolBusy(f"no worker was free within the {budget:g} s budget") from None
            raise PoolBusy(
                f"the wait for a worker left {job} too little of its {budget:g} s budget "
                "(it ends in its worker, unanswered)"
            ) from None

    async def stop(self, grace: float = 2.0) -> None:
        """Refuse new jobs, fail the waiting ones, end every worker (a busy one at once, an idle
        one by closing its socket, killed if it has not gone after ``grace`` seconds) and reap
        them all."""
        self._closed = True
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(PoolClosed("the pool is stopped"))
                waiter.exception()  # retrieved here: a cancelled caller never reads it
        workers = list(self._living)
        for worker in workers:
            if worker.busy or worker.writer is None or worker.retired:
                _kill(worker)
            else:
                worker.writer.close()  # an idle worker reads the end of its input and exits
        for last_try in (False, True):
            exits = [w.exited for w in workers if not w.exited.done()]
            if exits:
                await asyncio.wait(exits, timeout=grace)
            if last_try:
                break
            for worker in workers:
                if not worker.exited.done():
                    _kill(worker)
        for worker in workers:
            self._retire(worker, replace=False)
        if self._tasks:  # the starts cut short
            _, late = await asyncio.wait(list(self._tasks), timeout=grace)
            for task in late:
                task.cancel()
        self.metrics.busy.set(0)
        self.metrics.waiting.set(0)

    # --- workers -------------------------------------------------------------------------

    def _fill(self) -> None:
        """Start workers until there are ``size`` (live or starting)."""
        while not self._closed and len(self._workers) < self.size:
            self._spawn()

    def _spawn(self) -> None:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair()
        process = self._context.Process(
            target=_serve,
            args=(theirs, self._initializer, os.getpid(), self.niceness),
            name="workpool-worker",
            daemon=True,
        )
        try:
            process.start()
        finally:
            theirs.close()  # the child has its own copy now (or there is no child)
        exited: asyncio.Future[None] = loop.create_future()
        worker = _Worker(process, ours, exited, pid=process.pid or 0)
        sentinel = process.sentinel

        def reap() -> None:
            # The sentinel closes as the process ends, a moment before it can be waited for.
            process.join(0)
            if process.exitcode is None:
                loop.call_later(0.01, reap)
                return
            worker.exitcode = process.exitcode
            process.close()
            self._living.discard(worker)
            exited.set_result(None)
            # An idle worker that died (killed from outside, out of memory) goes now; a busy
            # or starting one goes when its job or its start reads the end of its socket.
            if not worker.retired and not worker.busy and worker in self._idle:
                self._retire(worker)

        def on_exit() -> None:
            loop.remove_reader(sentinel)
            reap()

        loop.add_reader(sentinel, on_exit)
        self._workers.append(worker)
        self._living.add(worker)
        self.metrics.started.inc()
        self._track(self._boot(worker))

    async def _boot(self, worker: _Worker) -> None:
        """Connect to a new worker and wait for its word that it is ready for jobs."""
        try:
            reader, writer = await asyncio.open_connection(sock=worker.sock)
            worker.reader, worker.writer = reader, writer
            async with asyncio.timeout(self.start_seconds):
                reply = pickle.loads(await _receive(reader))
            if reply != ("ready", worker.pid):
                raise WorkerLost(f"a worker said {reply!r} instead of being ready")
        except asyncio.CancelledError:
            raise
        except Exception as err:
            # Killed while starting: start another; failing every time: give up until the
            # next job asks (a worker that cannot start would otherwise be started forever).
            self._start_failures += 1
            self._retire(worker, replace=self._start_failures < START_TRIES)
            if not self._workers:
                why = f"no worker could be started: {type(err).__name__}: {err}"
                self._fail_waiters(WorkerLost(why))
            return
        self._start_failures = 0
        self._release(worker)

    def _release(self, worker: _Worker) -> None:
        """A ready worker: to the first waiting job, else to the idle ones."""
        worker.busy = False
        if self._closed or worker.retired:
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                worker.busy = True
                waiter.set_result(worker)
                break
        else:
            self._idle.append(worker)
        self._gauges()

    def _retire(self, worker: _Worker, replace: bool = True) -> None:
        """Take a worker out of the pool (killing it if it still runs); start another in its
        place while the pool is in use."""
        if worker.retired:
            return
        worker.retired = True
        worker.busy = False
        if worker in self._workers:
            self._workers.remove(worker)
        if worker in self._idle:
            self._idle.remove(worker)
        if not worker.exited.done():
            _kill(worker)
        if worker.writer is not None:
            worker.writer.close()
        else:
            worker.sock.close()
        self._gauges()
        if replace and self._warm:
            self._fill()

    def _fail_waiters(self, error: Exception) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(error)
                waiter.exception()
        self._gauges()

    def _track(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _gauges(self) -> None:
        self.metrics.busy.set(self.running())
        self.metrics.waiting.set(self.waiting())

    # --- jobs ----------------------------------------------------------------------------

    async def _acquire(self, job: str) -> _Worker:
        self._warm = True
        self._fill()
        if self._idle:
            worker = self._idle.popleft()
            worker.busy = True
            self._gauges()
            return worker
        # A worker still starting is not busy: the job it will take waits beyond the queue.
        if self.waiting() >= self.queue + self.starting():
            self.metrics.jobs.labels(job, "busy").inc()
            raise PoolBusy(
                f"all {self.size} workers are busy and {self.queue} jobs wait already; "
                "try again shortly"
            )
        waiter: asyncio.Future[_Worker] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._gauges()
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self._release(waiter.result())  # it came just as the caller left
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)
            self._gauges()
            raise
        except PoolClosed:
            self.metrics.jobs.labels(job, "closed").inc()
            raise
        except WorkerLost:
            self.metrics.jobs.labels(job, "lost").inc()
            raise

    async def _execute(self, worker: _Worker, job: str, payload: bytes, budget: float) -> Any:
        assert worker.reader is not None and worker.writer is not None
        try:
            async with asyncio.timeout(budget):
                await _send(worker.writer, payload)
                reply = await _receive(worker.reader)
        except TimeoutError:
            self._retire(worker)
            self.metrics.jobs.labels(job, "timeout").inc()
            raise JobTimeout(
                f"{job} ran past its budget of {budget:g} s; its worker was stopped"
            ) from None
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            self._retire(worker)
            if self._closed:
                self.metrics.jobs.labels(job, "closed").inc()
                raise PoolClosed(f"the pool stopped while {job} ran") from None
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.start_seconds):
                    await asyncio.shield(worker.exited)
            self.metrics.jobs.labels(job, "lost").inc()
            why = _exit_text(worker.exitcode)
            raise WorkerLost(f"the worker running {job} stopped ({why})") from None
        self._release(worker)
        try:
            kind, value = pickle.loads(reply)
        except Exception as err:
            kind, value = "raised", JobError(f"the job's answer could not be read: {err!r}")
        if kind == "ok":
            self.metrics.jobs.labels(job, "done").inc()
            return value
        self.metrics.jobs.labels(job, "failed").inc()
        raise value


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Read a job's outcome even when its caller went away (no 'never retrieved' warnings)."""
    if not task.cancelled():
        task.exception()


def _kill(worker: _Worker) -> None:
    with contextlib.suppress(ProcessLookupError, ValueError, AttributeError):
        worker.process.kill()


def _exit_text(code: int | None) -> str:
    if code is None:
        return "it did not exit"
    if code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


async def _send(writer: asyncio.StreamWriter, payload: bytes) -> None:
    writer.write(_HEADER.pack(len(payload)))
    writer.write(payload)
    await writer.drain()


async def _receive(reader: asyncio.StreamReader) -> bytes:
    (size,) = _HEADER.unpack(await reader.readexactly(_HEADER.size))
    return await reader.readexactly(size)


# --- the worker process --------------------------------------------------------------------


def _serve(
    sock: socket.socket, initializer: Callable[[], object] | None, parent: int, niceness: int
) -> None:
    """A worker's life: set up, say it is ready, then run one job after another until its
    socket closes. A worker runs ``niceness`` below its parent's CPU priority: when the cores
    are short, the parent's event loop (every other request) goes first and the jobs wait."""
    _die_with_parent(parent)
    if niceness > 0:
        with contextlib.suppress(OSError):  # a platform without priorities runs it as it is
            os.nice(niceness)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    if initializer is not None:
        initializer()
    _write(sock, pickle.dumps(("ready", os.getpid())))
    while True:
        payload = _read(sock)
        if payload is None:
            return
        try:
            fn, args = pickle.loads(payload)
            reply: tuple[str, Any] = ("ok", fn(*args))
        except Exception as err:
            reply = ("raised", err)
        try:
            data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.loads(data)  # an exception that cannot be rebuilt would fail in the parent
        except Exception as err:
            what = reply[1]
            text = f"{type(what).__name__}: {what}" if reply[0] == "raised" else repr(err)
            data = pickle.dumps(("raised", JobError(text)))
        _write(sock, data)


def _die_with_parent(parent: int) -> None:
    """Linux: the kernel kills this process when its parent dies (even by SIGKILL), so a worker
    in a long job never outlives the service that started it."""
    name = ctypes.util.find_library("c")
    if name is None:
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(name, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)


def _read(sock: socket.socket) -> bytes | None:
    header = _exactly(sock, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    return _exactly(sock, size)


def _exactly(sock: socket.socket, size: int) -> bytes | None:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        try:
            n = sock.recv_into(view[got:])
        except OSError:  # the parent went away
            return None
        if n == 0:
            return None
        got += n
    return bytes(buffer)


def _write(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(_HEADER.pack(len(payload)) + payload)
