"""The servers a test starts itself (a redis-server of its own on a spare port, plain or a
cluster node; a child process with its output in a file) and how a test waits for something to
hold: poll it, with a deadline that is a
safety net only (a hang fails; a slow machine only waits longer, never fails for being slow).
Free ports come from ``tests/ports.py``."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Protocol

import aiohttp
import pytest
import redis

from tests.ports import spare_port

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT = 30.0  # safety nets: a server that hangs fails the test, a slow one does not
STOP_TIMEOUT = 20.0


# --- waiting ----------------------------------------------------------------------------------


Message = str | Callable[[], str]  # what a failed wait says (a function: read when it fails)


def _failed(message: Message, value: Any, timeout: float) -> AssertionError:
    said = message() if callable(message) else message
    return AssertionError(said or f"still {value!r} after {timeout} s")


async def until(
    what: Callable[[], Any], timeout: float, every: float = 0.05, message: Message = ""
) -> Any:
    """Poll ``what`` (a function, or a coroutine function) until it returns something true;
    that value. Fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = what()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise _failed(message, value, timeout)
        await asyncio.sleep(every)


def wait_until(
    what: Callable[[], Any], timeout: float, every: float = 0.05, message: Message = ""
) -> Any:
    """``until`` for code without an event loop (fixtures, benches): blocks while it polls."""
    deadline = time.monotonic() + timeout
    while True:
        value = what()
        if value:
            return value
        if time.monotonic() > deadline:
            raise _failed(message, value, timeout)
        time.sleep(every)


def listening(port: int) -> bool:
    """Whether something accepts connections on ``port`` of the loopback."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


# --- HTTP readiness ---------------------------------------------------------------------------


def url_ok(url: str, timeout: float = 2.0) -> bool:
    """Whether a GET of ``url`` answers 200 (for code without an event loop)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return bool(response.status == 200)
    except OSError:  # refused, reset, timed out, or an HTTP error status
        return False


class Probed(Protocol):
    """A process with a health port: what ``wait_ready`` needs of it."""

    @property
    def name(self) -> str: ...

    @property
    def port(self) -> int: ...

    @property
    def alive(self) -> bool: ...

    def output(self) -> str: ...


async def http_status(
    session: aiohttp.ClientSession, port: int, path: str, timeout: float = 2.0
) -> tuple[int | None, str]:
    """(status, body) of a GET, or (None, why) if nothing answered within ``timeout``."""
    try:
        async with session.get(
            f"http://127.0.0.1:{port}{path}", timeout=aiohttp.ClientTimeout(total=timeout)
        ) as response:
            return response.status, await response.text()
    except (aiohttp.ClientError, TimeoutError, OSError) as err:
        return None, repr(err)


async def wait_ready(
    session: aiohttp.ClientSession, *services: Probed, timeout: float = START_TIMEOUT
) -> None:
    """Until every service's /readyz answers 200 (a service that exits fails at once)."""
    for service in services:

        async def ready(service: Probed = service) -> bool:
            assert service.alive, f"{service.name} exited:\n{service.output()[-3000:]}"
            status, _ = await http_status(session, service.port, "/readyz")
            return status == 200

        def why(service: Probed = service) -> str:
            return f"{service.name} not ready:\n{service.output()[-3000:]}"

        await until(ready, timeout, message=why)


# --- child processes ------------------------------------------------------------------------


class Process:
    """A child process of the test (run in the repository, or in ``cwd``), its output in
    ``logs/NAME.log`` (``append``: kept across starts of the same name). ``port``: its health
    or API port."""

    def __init__(
        self,
        name: str,
        args: list[str],
        env: dict[str, str],
        logs: Path,
        port: int = 0,
        append: bool = False,
        cwd: Path = ROOT,
    ) -> None:
        self.name = name
        self.port = port
        self.log = logs / f"{name}.log"
        self.out: IO[bytes] = self.log.open("ab" if append else "wb")
        self.popen = subprocess.Popen(
            args, cwd=cwd, env=env, stdout=self.out, stderr=subprocess.STDOUT
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    def output(self) -> str:
        self.out.flush()
        return self.log.read_text(errors="replace")

    def log_lines(self) -> list[dict[str, Any]]:
        """Its output's JSON objects (one a line; other lines left out)."""
        lines = []
        for raw in self.output().splitlines():
            with contextlib.suppress(ValueError):
                doc = json.loads(raw)
                if isinstance(doc, dict):
                    lines.append(doc)
        return lines

    def hung(self) -> None:
        """Called when it ignored a stop signal, before it is killed (to ask where it waits)."""

    def stop(self, sig: int = signal.SIGTERM, shown: int = 3000) -> int:
        """Signal it and wait for its exit code; one that ignores the signal fails the test
        (with the last ``shown`` characters of its output)."""
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
        try:
            return self.popen.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired as err:
            self.hung()
            self.popen.kill()
            self.popen.wait()
            raise AssertionError(f"{self.name} ignored {sig!r}:\n{self.output()[-shown:]}") from err

    def close(self) -> None:
        """Kill it if it still runs; close its output file."""
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()
        self.out.close()


# --- redis-server -----------------------------------------------------------------------------


def redis_server_binary(why: str = "this test starts a redis-server of its own") -> str:
    """The redis-server on the PATH; the test is skipped (saying ``why``) without one."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip(f"redis-server is not on the PATH ({why}; .ci/run installs it)")
    return binary


class RedisServer:
    """A redis-server of one test on a spare port (never the shared one), its files in ``dir``.
    ``aof``: the append-only file on, flushed per ``fsync`` (``always`` or ``everysec``).
    ``maxmemory`` (e.g. ``"32mb"``): a memory limit, past which it refuses every write that adds
    data (``noeviction``: nothing is evicted to make room). ``cluster``: a cluster node (its bus
    port free too), with no slots until it is given some; ``node_timeout``: its
    ``cluster-node-timeout`` in milliseconds (how long a master may be unreachable before its
    replica is promoted)."""

    def __init__(
        self,
        workdir: Path,
        aof: bool = False,
        fsync: str = "always",
        maxmemory: str | None = None,
        cluster: bool = False,
        binary: str | None = None,
        node_timeout: int = 5000,
    ) -> None:
        self.binary = binary or redis_server_binary()
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.cluster = cluster
        self.node_timeout = node_timeout
        self.port = spare_port(bus=cluster)
        self.aof = aof
        self.fsync = fsync
        self.maxmemory = maxmemory
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = self.dir / f"redis-{self.port}.log"
        self.starts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def client(self, timeout: float = 2.0) -> redis.Redis:
        """A plain client of this node (on a cluster node: it sees MOVED, it does not follow)."""
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=timeout)

    def arguments(self) -> list[str]:
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        args += ["--appendonly", "yes" if self.aof else "no", "--appendfsync", self.fsync]
        args += ["--dir", str(self.dir), "--logfile", str(self.log)]
        if self.maxmemory is not None:
            args += ["--maxmemory", self.maxmemory, "--maxmemory-policy", "noeviction"]
        if self.cluster:
            args += ["--cluster-enabled", "yes", "--cluster-node-timeout", str(self.node_timeout)]
            args += ["--cluster-config-file", str(self.dir / f"nodes-{self.port}.conf")]
        return args

    def launch(self) -> None:
        """Start it (again: same port, same directory) without waiting."""
        assert self.proc is None or self.proc.poll() is not None, "redis-server runs already"
        self.proc = subprocess.Popen(
            self.arguments(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.starts += 1

    def wait_started(self, timeout: float = START_TIMEOUT) -> None:
        """Until it answers PING (while it loads its AOF it answers LOADING: not yet)."""
        assert self.proc is not None
        with self.client() as node:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    node.ping()  # LOADING (replaying the AOF) is a ConnectionError too
                    return
                except redis.ConnectionError:
                    if self.proc.poll() is not None:
                        raise RuntimeError(f"redis-server exited: {self.tail()}") from None
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"redis-server did not start: {self.tail()}") from None
                    time.sleep(0.02)

    def start(self) -> None:
        """Start it (again: same port, same directory) and wait until it answers."""
        self.launch()
        self.wait_started()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Signal it (SIGTERM: a clean shutdown, the AOF flushed) and wait for the exit."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(STOP_TIMEOUT)

    def close(self) -> None:
        """Kill it whatever state it is in (stopped by SIGSTOP too): its data is the test's."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


@contextmanager
def own_redis_url(workdir: Path) -> Iterator[str]:
    """A redis-server of the test's own if one is installed, else ``REDIS_URL`` (the caller
    then keeps to a key prefix of its own), else the test is skipped."""
    if shutil.which("redis-server") is None:
        url = os.environ.get("REDIS_URL")
        if not url:
            pytest.skip("neither redis-server on the PATH nor REDIS_URL: no real Redis")
        yield url
        return
    with RedisServer(workdir) as server:
        yield server.url
