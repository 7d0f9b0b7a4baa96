"""JSON logs, Prometheus metrics and the health endpoints every process serves.

Each service builds its metrics on its own ``CollectorRegistry`` (so several services can share
one process under ``rummy serve``) and mounts ``/healthz``, ``/readyz`` and ``/metrics``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, TextIO

import orjson
import structlog
from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    ProcessCollector,
    generate_latest,
)
from structlog.typing import Processor

_configured = False

READY_SECONDS = 0.8
"""How long ``/readyz`` waits for the service's answer: a probe gives up after a second (the
Kubernetes default), and with Redis away the client's retries would take about 9 s."""


def _dumps(line: dict[str, Any], **options: Any) -> str:
    """A line as JSON by orjson (a third of a referee's per-command line's cost went to the
    standard library's encoder); what orjson cannot encode (an integer past 64 bits) by the
    standard library's, so no line is ever lost to its fields."""
    try:
        return orjson.dumps(
            line, default=options.get("default"), option=orjson.OPT_NON_STR_KEYS
        ).decode()
    except orjson.JSONEncodeError:
        return json.dumps(line, **options)


_RENDERING: list[Processor] = [
    structlog.processors.StackInfoRenderer(),
    structlog.processors.format_exc_info,  # exc_info -> "exception": the traceback as text
    structlog.processors.JSONRenderer(_dumps),  # escapes newlines: a traceback stays on its line
]
"""The end of both chains: the same fields, the same renderer for every line."""


def configure_logging(level: str = "info") -> None:
    """One JSON object per line on stdout, with a timestamp and the level: structlog's events
    and the standard library's records alike (aiohttp, asyncio, redis, any library), a
    traceback inside its line (``exception``), never on lines of its own."""
    global _configured
    if _configured:
        return
    _configured = True
    threshold = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    structlog.configure(
        processors=_structlog_chain(),
        wrapper_class=structlog.make_filtering_bound_logger(threshold),
        logger_factory=structlog.WriteLoggerFactory(sys.stdout),  # one write a line
        cache_logger_on_first_use=True,
    )
    root = logging.getLogger()
    root.handlers[:] = [json_handler(sys.stdout)]
    root.setLevel(threshold)
    logging.captureWarnings(True)  # warnings.warn: a record of "py.warnings", not stderr text
    sys.excepthook = _log_uncaught
    threading.excepthook = _log_uncaught_in_thread


def _structlog_chain() -> list[Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        *_RENDERING,
    ]


def announce(event: str, **fields: Any) -> None:
    """Write one line whatever the log level: where a process listens is what a person
    starting it needs (``RUMMY_LOG_LEVEL=warning`` keeps it), in the shape of every line."""
    logger = structlog.wrap_logger(
        structlog.WriteLogger(sys.stdout),
        processors=_structlog_chain(),
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
    )
    logger.info(event, **fields)


def json_handler(stream: TextIO) -> logging.Handler:
    """A ``logging`` handler writing each record as one JSON line, as structlog renders its
    events (``event``, ``level``, ``logger``, ``timestamp``, ``exception``)."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.contextvars.merge_contextvars,
                structlog.processors.add_log_level,
                structlog.stdlib.add_logger_name,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
            ],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *_RENDERING],
        )
    )
    return handler


def _log_uncaught(
    kind: type[BaseException], error: BaseException, trace: TracebackType | None
) -> None:
    """A crash of the process is a log line too (Ctrl-C stays Python's own short notice)."""
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, error, trace)
        return
    logging.getLogger("rummy").critical("uncaught exception", exc_info=(kind, error, trace))


def _log_uncaught_in_thread(args: threading.ExceptHookArgs) -> None:
    if args.exc_value is None:
        return
    name = args.thread.name if args.thread is not None else "?"
    logging.getLogger("rummy").error(
        "uncaught exception in thread %s",
        name,
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
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
