"""`rummy archiver`: the archiver process (finished games and tournaments from Redis to the
archive)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shared.infra.client import RedisClient
    from shared.infra.process import Built

DEFAULT_PORT = 9103


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rummy archiver`."""
    sub.add_parser(
        "archiver",
        help="run the archiver (needs REDIS_URL and RUMMY_ARCHIVE_URL)",
        description="Archives every finished game and tournament (its record, audited) into "
        "RUMMY_ARCHIVE_URL (postgresql://... or sqlite:///path) and removes it from Redis "
        "RUMMY_RETAIN_SECONDS after its archive row is read back. Health and metrics on "
        "RUMMY_HTTP_PORT (default 9103). See docs/archive.md.",
    )


def run(args: argparse.Namespace) -> int:
    """Run until SIGTERM."""
    from services.archiver.archiver import Archiver
    from shared.archive.opening import ArchiveUrlError, open_archive
    from shared.infra.process import process_settings, serve_on_redis

    settings = process_settings("archiver", needs_redis=True)
    if settings is None:
        return 2
    if not settings.archive_url:
        print(
            "rummy archiver: set RUMMY_ARCHIVE_URL (postgresql://... or sqlite:///path)",
            file=sys.stderr,
        )
        return 2
    try:
        archive = open_archive(settings.archive_url)
    except ArchiveUrlError as err:
        print(f"rummy archiver: RUMMY_ARCHIVE_URL: {err}", file=sys.stderr)
        return 2

    def build(client: RedisClient) -> Built:
        archiver = Archiver(client, settings, archive)
        return archiver, archiver.registry, None

    port = settings.http_port or DEFAULT_PORT
    asyncio.run(serve_on_redis("archiver", settings, build, settings.http_host, port))
    return 0
