"""`rummy scoring`: the scoring process (`--rebuild` is `rummy rebuild`, kept for old scripts)."""

from __future__ import annotations

import argparse
import asyncio
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
        help="the same as `rummy rebuild` (kept for old scripts): drop the projections, "
        "rebuild them from the logs, print the differences, exit 1 if there were any",
    )


async def _main(settings: Settings) -> int:
    from services.scoring.scoring import Scoring
    from shared.infra.connection import connect
    from shared.infra.process import run_service

    client = connect(settings)
    scoring = Scoring(client, settings)
    try:
        port = settings.http_port or DEFAULT_PORT
        await run_service("scoring", scoring, scoring.registry, settings.http_host, port)
        return 0
    finally:
        await client.aclose()


def run(args: argparse.Namespace) -> int:
    """Run until SIGTERM (or, with ``--rebuild``, be `rummy rebuild`: one command, one report,
    one exit code)."""
    if args.rebuild:
        from services.scoring import rebuild

        return rebuild.run(argparse.Namespace(command="rebuild"))
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
    return asyncio.run(_main(settings))
