"""How every process runs its service (``shared.infra.process.run_service``): on SIGTERM a health
port stays up while its service drains, an app's port closes before the work behind it stops,
a service that fails makes the process fail, and several services run and stop as one."""

from __future__ import annotations

import asyncio
import os
import signal

import aiohttp
import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from shared.infra.process import Listening, Together, run_service
from tests.ports import spare_port
from tests.servers import until

SAFETY = 60.0  # a hang fails the test; never what is asserted


class Draining:
    """A service that, once stopped, takes until ``finish`` is set to end its work; it notes
    what the port answered while it drained."""

    def __init__(self, port: int, fail: bool = False) -> None:
        self.port = port
        self.fail = fail
        self.stopped = asyncio.Event()
        self.finish = asyncio.Event()
        self.started = asyncio.Event()
        self.port_while_draining: int | str | None = None

    async def run(self) -> None:
        self.started.set()
        if self.fail:
            raise RuntimeError("the service failed")
        await self.stopped.wait()
        self.port_while_draining = await status(self.port, "/healthz")
        await self.finish.wait()

    def stop(self) -> None:
        self.stopped.set()
        self.finish.set()

    async def ready(self) -> tuple[bool, str]:
        return (not self.stopped.is_set(), "draining" if self.stopped.is_set() else "ready")


async def status(port: int, path: str) -> int | str:
    try:
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{port}{path}") as reply,
        ):
            return reply.status
    except aiohttp.ClientError as err:
        return type(err).__name__


def sigterm() -> None:
    os.kill(os.getpid(), signal.SIGTERM)


async def test_a_health_port_stays_up_while_its_service_drains() -> None:
    port = spare_port()
    service = Draining(port)
    running = asyncio.create_task(
        run_service("test", service, CollectorRegistry(), "127.0.0.1", port)
    )
    async with asyncio.timeout(SAFETY):
        await service.started.wait()
        assert await status(port, "/readyz") == 200
        sigterm()
        await running
    assert service.port_while_draining == 200  # probes still answered during the drain
    assert await status(port, "/healthz") == "ClientConnectorError"  # closed once drained


async def test_an_apps_port_closes_before_the_work_behind_it_stops() -> None:
    port = spare_port()
    service = Draining(port)
    app = web.Application()

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app.router.add_get("/healthz", healthz)
    heard: list[str] = []
    running = asyncio.create_task(
        run_service(
            "test",
            service,
            CollectorRegistry(),
            "127.0.0.1",
            port,
            app=app,
            on_listening=lambda: heard.append("listening"),
        )
    )
    async with asyncio.timeout(SAFETY):
        await service.started.wait()
        assert heard == ["listening"]
        assert await status(port, "/healthz") == 200
        sigterm()
        await running
    assert service.port_while_draining == "ClientConnectorError"


async def test_a_failing_service_fails_the_process_and_closes_its_port() -> None:
    port = spare_port()
    with pytest.raises(RuntimeError, match="the service failed"):
        async with asyncio.timeout(SAFETY):
            await run_service(
                "test", Draining(port, fail=True), CollectorRegistry(), "127.0.0.1", port
            )
    assert await status(port, "/healthz") == "ClientConnectorError"


async def test_a_busy_port_raises_before_the_service_starts() -> None:
    port = spare_port()
    blocker = await asyncio.start_server(lambda r, w: None, "127.0.0.1", port)
    service = Draining(port)
    try:
        with pytest.raises(OSError):
            await run_service("test", service, CollectorRegistry(), "127.0.0.1", port)
    finally:
        blocker.close()
    assert not service.started.is_set()


async def test_services_together_run_stop_and_are_ready_as_one() -> None:
    port = spare_port()
    one, two = Draining(port), Draining(port)
    listening = Listening(lambda: asyncio.sleep(0, (True, "ready")))
    together = Together(listening, one, two)
    assert await together.ready() == (True, "ready")
    running = asyncio.create_task(together.run())
    async with asyncio.timeout(SAFETY):
        await one.started.wait()
        await two.started.wait()
        two.stopped.set()  # one of them draining: not ready
        assert await together.ready() == (False, "draining")
        together.stop()
        await running
    assert one.stopped.is_set() and two.stopped.is_set()
    await until(lambda: running.done(), SAFETY)
