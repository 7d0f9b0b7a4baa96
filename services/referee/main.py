"""`rummy referee`: one referee process against REDIS_URL (settings from the environment)."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shared.infra.client import RedisClient
    from shared.infra.process import Built

DEFAULT_PORT = 9101


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rummy referee`."""
    sub.add_parser(
        "referee",
        help="run a referee process (needs REDIS_URL; settings from RUMMY_* variables)",
        description="Reads the command streams, decides, appends. Health, readiness and "
        "metrics on RUMMY_HTTP_PORT (default 9101).",
    )


def run(args: argparse.Namespace) -> int:
    """Run until SIGTERM."""
    from services.referee.referee import Referee
    from shared.infra.process import process_settings, serve_on_redis

    settings = process_settings("referee", needs_redis=True)
    if settings is None:
        return 2

    def build(client: RedisClient) -> Built:
        referee = Referee(client, settings)
        return referee, referee.metrics.registry, None

    port = settings.http_port or DEFAULT_PORT
    asyncio.run(serve_on_redis("referee", settings, build, settings.http_host, port))
    return 0
