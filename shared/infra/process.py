"""Running one service as a process: settings from the environment, JSON logs, the health and
metrics endpoints on a small port, and a drain on SIGTERM or Ctrl-C."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Protocol

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry

from shared.infra.client import RedisClient
from shared.infra.connection import connect, disconnect
from shared.infra.observability import configure_logging, health_routes
from shared.infra.serving import start_http
from shared.infra.settings import Settings, SettingsError


def process_settings(name: str, *, needs_redis: bool, **overrides: object) -> Settings | None:
    """``rummy <name>``'s settings from the environment (``overrides`` win), its logs
    configured; None once the reason it cannot run is on stderr (a setting no service could run
    with, or no ``REDIS_URL`` where a shared Redis is needed)."""
    try:
        settings = Settings.from_env(None, **overrides)
    except SettingsError as err:
        print(f"rummy {name}: {err}", file=sys.stderr)
        return None
    if needs_redis and settings.redis_url is None:
        print(f"rummy {name}: set REDIS_URL (or use `rummy serve`)", file=sys.stderr)
        return None
    configure_logging(settings.log_level)
    return settings


class Service(Protocol):
    """What a process runs: work until ``stop``, and say whether it is ready."""

    async def run(self) -> None: ...

    def stop(self) -> None: ...

    async def ready(self) -> tuple[bool, str]: ...


async def start_health_server(
    host: str,
    port: int,
    registry: CollectorRegistry,
    ready: Callable[[], Awaitable[tuple[bool, str]]],
) -> web.AppRunner:
    """Serve /healthz, /readyz and /metrics; returns the runner to clean up."""
    app = web.Application()
    health_routes(app, registry, ready)
    return await start_http(app, host, port)


async def run_service(
    name: str,
    service: Service,
    registry: CollectorRegistry,
    host: str,
    port: int,
    *,
    app: web.Application | None = None,
    on_listening: Callable[[], None] | None = None,
) -> None:
    """Run ``service`` with its HTTP port until SIGTERM/SIGINT, then drain and exit.

    The port serves ``app`` when the service's work is answering HTTP (the gateway: its app
    has the health routes too), else the health routes alone. A health port stays up while
    its service drains (``/readyz`` says so); an ``app``'s port closes first, so the requests
    in flight finish and no new ones come before the work behind them stops. A port that
    cannot be opened raises ``OSError`` before anything has started."""
    log = structlog.get_logger(name)
    if app is None:
        runner = await start_health_server(host, port, registry, service.ready)
    else:
        runner = await start_http(app, host, port)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    log.info(f"{name} started", url=f"http://{host}:{port}/")
    if on_listening is not None:
        on_listening()
    work = asyncio.create_task(service.run(), name=f"{name}-run")
    waiting = asyncio.create_task(stopping.wait())
    try:
        await asyncio.wait([work, waiting], return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
        try:
            if app is not None:
                await runner.cleanup()
            service.stop()
            await work
        finally:
            if app is None:
                await runner.cleanup()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            log.info(f"{name} stopped")


class Together:
    """Several services as one (``rummy serve``): run all, stop all in the order given, ready
    when every one is."""

    def __init__(self, *services: Service) -> None:
        self.services = services

    async def run(self) -> None:
        await asyncio.gather(*(s.run() for s in self.services))

    def stop(self) -> None:
        for service in self.services:
            service.stop()

    async def ready(self) -> tuple[bool, str]:
        for service in self.services:
            ok, why = await service.ready()
            if not ok:
                return ok, why
        return True, "ready"


class Listening:
    """A service whose whole work is its HTTP app: it runs until stopped."""

    def __init__(self, ready: Callable[[], Awaitable[tuple[bool, str]]]) -> None:
        self._ready = ready
        self._stopped = asyncio.Event()

    async def run(self) -> None:
        await self._stopped.wait()

    def stop(self) -> None:
        self._stopped.set()

    async def ready(self) -> tuple[bool, str]:
        return await self._ready()


Built = tuple["Service", CollectorRegistry, web.Application | None]


async def serve_on_redis(
    name: str,
    settings: Settings,
    build: Callable[[RedisClient], Built],
    host: str,
    port: int,
    on_listening: Callable[[], None] | None = None,
) -> None:
    """A process's life: connect to its Redis (or the embedded stand-in), build its service on
    that client (the service, its metrics, its HTTP app if its work is HTTP), run it until
    SIGTERM or Ctrl-C (:func:`run_service`), and close the connection."""
    client = connect(settings)
    try:
        service, registry, app = build(client)
        await run_service(name, service, registry, host, port, app=app, on_listening=on_listening)
    finally:
        await disconnect(client)
