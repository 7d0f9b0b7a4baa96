"""`rummy scoring`: the scoring process (`--rebuild` is `rummy rebuild`, kept for old scripts)."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shared.infra.client import RedisClient
    from shared.infra.process import Built

DEFAULT_PORT = 9102


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rummy scoring`."""
    p = sub.add_parser(
        "scoring",
        help="run the scoring process (needs REDIS_URL), or rebuild its projections",
        description="Follows the feed, records score sheets, keeps standings, leaderboard and "
        "player statistics. Health and metrics on RUMMY_HTTP_PORT (default 9102).",
    )
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="the same as `rummy rebuild` (kept for old scripts): drop the projections, "
        "rebuild them from the logs, print the differences, exit 1 if there were any",
    )


def run(args: argparse.Namespace) -> int:
    """Run until SIGTERM (or, with ``--rebuild``, be `rummy rebuild`: one command, one report,
    one exit code)."""
    if args.rebuild:
        from services.scoring import rebuild

        return rebuild.run(argparse.Namespace(command="rebuild"))
    from services.scoring.scoring import Scoring
    from shared.infra.process import process_settings, serve_on_redis

    settings = process_settings("scoring", needs_redis=True)
    if settings is None:
        return 2

    def build(client: RedisClient) -> Built:
        scoring = Scoring(client, settings)
        return scoring, scoring.registry, None

    port = settings.http_port or DEFAULT_PORT
    asyncio.run(serve_on_redis("scoring", settings, build, settings.http_host, port))
    return 0
