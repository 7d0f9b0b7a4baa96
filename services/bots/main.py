"""`rummy bots`: one bots process against REDIS_URL (settings from the environment)."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shared.infra.client import RedisClient
    from shared.infra.process import Built

DEFAULT_PORT = 9104


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rummy bots`."""
    sub.add_parser(
        "bots",
        help="run a bots process: plays the seats given to bots (needs REDIS_URL)",
        description="Follows the feed and sends the moves of every bot seat whose turn it is, "
        "paced by RUMMY_BOT_DELAY_SECONDS, solver bots within RUMMY_BOT_SECONDS. Health, "
        "readiness and metrics on RUMMY_HTTP_PORT (default 9104).",
    )


def run(args: argparse.Namespace) -> int:
    """Run until SIGTERM."""
    from services.bots.bots import Bots
    from shared.infra.process import process_settings, serve_on_redis

    settings = process_settings("bots", needs_redis=True)
    if settings is None:
        return 2

    def build(client: RedisClient) -> Built:
        bots = Bots(client, settings)
        return bots, bots.metrics.registry, None

    port = settings.http_port or DEFAULT_PORT
    asyncio.run(serve_on_redis("bots", settings, build, settings.http_host, port))
    return 0
