"""`rummy gateway`: the public HTTP/WebSocket API as its own process, against REDIS_URL."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shared.infra.client import RedisClient
    from shared.infra.process import Built

DEFAULT_PORT = 8080


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rummy gateway`."""
    p = sub.add_parser(
        "gateway",
        help="run the public API (needs REDIS_URL; settings from RUMMY_* variables)",
        description="Serves the API, /healthz, /readyz, /metrics and /openapi.json.",
    )
    p.add_argument("--host", default=None, help="address to listen on (default RUMMY_HTTP_HOST)")
    p.add_argument("--port", type=int, default=None, help="port (default 8080)")
    p.add_argument(
        "--allow-seeded-games",
        action="store_true",
        help="accept a fixed 'seed' at game creation (tests and demos only)",
    )


def run(args: argparse.Namespace) -> int:
    """Run until SIGTERM, then close every socket and exit."""
    from services.gateway.app import make_app
    from services.gateway.state import GATEWAY
    from shared.infra.observability import announce
    from shared.infra.process import Listening, process_settings, serve_on_redis

    overrides: dict[str, object] = {"allow_seeded_games": True} if args.allow_seeded_games else {}
    settings = process_settings("gateway", needs_redis=True, **overrides)
    if settings is None:
        return 2

    def build(client: RedisClient) -> Built:
        app = make_app(client, settings, warm=True)
        gateway = app[GATEWAY]
        return Listening(gateway.ready), gateway.metrics.registry, app

    host = args.host or settings.http_host
    port = args.port or settings.http_port or DEFAULT_PORT
    listening = lambda: announce("gateway listening", url=f"http://{host}:{port}/")  # noqa: E731
    asyncio.run(serve_on_redis("gateway", settings, build, host, port, listening))
    return 0
