"""`rummy referee`: one referee process against REDIS_URL (settings from the environment)."""

from __future__ import annotations

import argparse
import asyncio
import sys

from shared.infra.settings import Settings, SettingsError

DEFAULT_PORT = 9101


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rummy referee`."""
    sub.add_parser(
        "referee",
        help="run a referee process (needs REDIS_URL; settings from RUMMY_* variables)",
        description="Reads the command streams, decides, appends. Health, readiness and "
        "metrics on RUMMY_HTTP_PORT (default 9101).",
    )


async def _main(settings: Settings) -> None:
    from services.referee.referee import Referee
    from shared.infra.connection import connect
    from shared.infra.process import run_service

    client = connect(settings)
    referee = Referee(client, settings)
    port = settings.http_port or DEFAULT_PORT
    try:
        await run_service("referee", referee, referee.metrics.registry, settings.http_host, port)
    finally:
        await client.aclose()


def run(args: argparse.Namespace) -> int:
    """Run until SIGTERM."""
    try:
        settings = Settings.from_env()
    except SettingsError as err:
        print(f"rummy referee: {err}", file=sys.stderr)
        return 2
    if settings.redis_url is None:
        print("rummy referee: set REDIS_URL (or use `rummy serve`)", file=sys.stderr)
        return 2
    from shared.infra.observability import configure_logging

    configure_logging(settings.log_level)
    asyncio.run(_main(settings))
    return 0
