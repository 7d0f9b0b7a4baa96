"""`rummy tournaments`: one tournament service process against REDIS_URL."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shared.archive.base import Archive
    from shared.infra.client import RedisClient
    from shared.infra.process import Built

DEFAULT_PORT = 9105


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rummy tournaments`."""
    sub.add_parser(
        "tournaments",
        help="run the tournament service: decides tournament commands, runs their rounds "
        "(needs REDIS_URL)",
        description="Decides the tournament commands the gateways send, seats and starts each "
        "round's tables through the referees, records their results from the games' logs "
        "(the archive's too, with RUMMY_ARCHIVE_URL) and pairs the next round. Health, "
        "readiness and metrics on RUMMY_HTTP_PORT (default 9105). See docs/tournaments.md.",
    )


def run(args: argparse.Namespace) -> int:
    """Run until SIGTERM."""
    from services.tournament.service import TournamentService
    from shared.archive.opening import ArchiveUrlError, open_archive
    from shared.infra.process import process_settings, serve_on_redis

    settings = process_settings("tournaments", needs_redis=True)
    if settings is None:
        return 2
    archive: Archive | None = None
    if settings.archive_url:
        try:
            archive = open_archive(settings.archive_url)
        except ArchiveUrlError as err:
            print(f"rummy tournaments: RUMMY_ARCHIVE_URL: {err}", file=sys.stderr)
            return 2

    def build(client: RedisClient) -> Built:
        service = TournamentService(client, settings, archive)
        return service, service.metrics.registry, None

    port = settings.http_port or DEFAULT_PORT
    asyncio.run(serve_on_redis("tournaments", settings, build, settings.http_host, port))
    return 0
