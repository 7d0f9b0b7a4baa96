"""`rummy scoring`: the scoring process, or `--rebuild` of its projections from the logs."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from shared.infra.settings import Settings, SettingsError

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
        help="drop the projections, rebuild them from the logs, print the differences, exit",
    )


async def _main(settings: Settings, rebuild: bool) -> int:
    from services.scoring.scoring import Scoring
    from shared.infra.connection import connect
    from shared.infra.process import run_service

    client = connect(settings)
    scoring = Scoring(client, settings)
    try:
        if rebuild:
            report = await scoring.rebuild()
            print(json.dumps(report))
            return 0
        port = settings.http_port or DEFAULT_PORT
        await run_service("scoring", scoring, scoring.registry, settings.http_host, port)
        return 0
    finally:
        await client.aclose()


def run(args: argparse.Namespace) -> int:
    """Run until SIGTERM (or rebuild and exit)."""
    try:
        settings = Settings.from_env()
    except SettingsError as err:
        print(f"rummy scoring: {err}", file=sys.stderr)
        return 2
    if settings.redis_url is None:
        print("rummy scoring: set REDIS_URL (or use `rummy serve`)", file=sys.stderr)
        return 2
    from shared.infra.observability import configure_logging

    configure_logging(settings.log_level)
    return asyncio.run(_main(settings, args.rebuild))
