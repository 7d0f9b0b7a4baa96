"""Running one service as a process: settings from the environment, JSON logs, the health and
metrics endpoints on a small port, and a drain on SIGTERM or Ctrl-C."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from typing import Protocol

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry

from shared.infra.observability import health_routes
from shared.infra.serving import start_http


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
    name: str, service: Service, registry: CollectorRegistry, host: str, port: int
) -> None:
    """Run ``service`` with its health port until SIGTERM/SIGINT, then drain and exit."""
    log = structlog.get_logger(name)
    runner = await start_health_server(host, port, registry, service.ready)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, service.stop)
    log.info(f"{name} started", health=f"http://{host}:{port}/healthz")
    try:
        await service.run()
    finally:
        await runner.cleanup()
        log.info(f"{name} stopped")
