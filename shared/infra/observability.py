"""JSON logs, Prometheus metrics and the health endpoints every process serves.

Each service builds its metrics on its own ``CollectorRegistry`` (so several services can share
one process under ``rummy serve``) and mounts ``/healthz``, ``/readyz`` and ``/metrics``.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable

import structlog
from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    ProcessCollector,
    generate_latest,
)

_configured = False

READY_SECONDS = 0.8
"""How long ``/readyz`` waits for the service's answer: a probe gives up after a second (the
Kubernetes default), and with Redis away the client's retries would take about 9 s."""


def configure_logging(level: str = "info") -> None:
    """One JSON object per line on stdout, with a timestamp and the level."""
    global _configured
    if _configured:
        return
    _configured = True
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
        ),
        logger_factory=structlog.PrintLoggerFactory(sys.stdout),
        cache_logger_on_first_use=True,
    )


def health_routes(
    app: web.Application,
    registry: CollectorRegistry,
    ready: Callable[[], Awaitable[tuple[bool, str]]],
) -> None:
    """Mount ``/healthz`` (the process runs), ``/readyz`` (it can do its work) and ``/metrics``."""

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(request: web.Request) -> web.Response:
        try:
            ok, why = await asyncio.wait_for(ready(), READY_SECONDS)
        except TimeoutError:
            ok, why = False, f"no answer within {READY_SECONDS} s (is Redis reachable?)"
        return web.json_response(
            {"status": "ready" if ok else "not ready", "detail": why}, status=200 if ok else 503
        )

    async def metrics(request: web.Request) -> web.Response:
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)


def service_registry() -> CollectorRegistry:
    """A fresh registry for one service, with the process figures (resident memory, CPU)."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    return registry
