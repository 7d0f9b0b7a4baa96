"""`rummy serve`: gateway, referee, scoring, the bots, the tournaments and the archiver in one
process, on the embedded Redis stand-in (fakeredis with Lua) unless REDIS_URL is set. What
`make run` starts.

Finished games are archived into ``RUMMY_ARCHIVE_URL``, by default the SQLite file
``rummy-archive.db`` in the working directory (``DEFAULT_ARCHIVE``): the embedded Redis forgets
everything when the process stops, the archive keeps the finished games across restarts."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shared.infra.client import RedisClient
    from shared.infra.process import Built
    from shared.infra.settings import Settings

LOCAL = "127.0.0.1"
DEFAULT_PORT = 8080
DEFAULT_ARCHIVE = "sqlite://rummy-archive.db"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rummy serve`."""
    p = sub.add_parser(
        "serve",
        help="run the whole service in one process (embedded Redis unless REDIS_URL is set)",
    )
    p.add_argument(
        "--host",
        default=None,
        help="address to listen on (default RUMMY_HTTP_HOST if set, else 127.0.0.1: this"
        " machine only; 0.0.0.0 lets other machines in)",
    )
    p.add_argument(
        "--port", type=int, default=None, help="port (default RUMMY_HTTP_PORT if set, else 8080)"
    )
    p.add_argument(
        "--allow-seeded-games",
        action="store_true",
        help="accept a fixed 'seed' at game creation (tests and demos only)",
    )


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted: the HTTP port stops first (the requests in flight finish),
    then the referee, scoring and the bots."""
    from services.bots.bots import Bots
    from services.gateway.app import make_app
    from services.gateway.state import GATEWAY
    from services.referee.referee import Referee
    from services.scoring.scoring import Scoring
    from services.tournament.service import TournamentService
    from shared.infra.observability import announce
    from shared.infra.process import Listening, Together, process_settings, serve_on_redis

    overrides: dict[str, object] = {"allow_seeded_games": True} if args.allow_seeded_games else {}
    # --- the archive (a block of its own) ---
    if not os.environ.get("RUMMY_ARCHIVE_URL"):
        overrides["archive_url"] = DEFAULT_ARCHIVE
    # --- end of the archive's block ---
    settings = process_settings("serve", needs_redis=False, **overrides)
    if settings is None:
        return 2
    # --- the archive (a block of its own) ---
    from shared.archive.opening import ArchiveUrlError, open_archive

    try:
        archive = open_archive(settings.archive_url)
    except ArchiveUrlError as err:
        print(f"rummy serve: RUMMY_ARCHIVE_URL: {err}", file=sys.stderr)
        return 2
    # --- end of the archive's block ---
    host, port = listen_address(args, settings)

    def build(client: RedisClient) -> Built:
        app = make_app(client, settings, warm=True)
        gateway = app[GATEWAY]
        services = Together(
            Listening(gateway.ready),
            Referee(client, settings),
            Scoring(client, settings),
            Bots(client, settings),  # the seats given to bots
            TournamentService(client, settings, archive),  # the tournaments' rounds
        )
        # --- the archive (a block of its own): finished games move to it ---
        from services.archiver.archiver import Archiver

        services = Together(*services.services, Archiver(client, settings, archive))
        # --- end of the archive's block ---
        return services, gateway.metrics.registry, app

    def listening() -> None:
        where = "an embedded Redis stand-in" if settings.redis_url is None else settings.redis_url
        announce(
            f"Robbers' Rummy is running on {where}: open http://{host}:{port}/ (API at"
            f" http://{host}:{port}/api/games, description at /openapi.json). Ctrl-C stops it.",
            url=f"http://{host}:{port}/",
        )

    try:  # a busy port raises before any service has started
        asyncio.run(serve_on_redis("serve", settings, build, host, port, listening))
    except OSError as err:
        print(
            f"rummy serve: cannot listen on {host}:{port}: {err.strerror or err}.\n"
            f"Pick another port: `make run PORT=8090` or `rummy serve --port 8090`"
            " (and `--host 0.0.0.0` to let other machines in).",
            file=sys.stderr,
        )
        return 1
    return 0


def listen_address(args: argparse.Namespace, settings: Settings) -> tuple[str, int]:
    """Where to listen: the flags, else ``RUMMY_HTTP_HOST``/``RUMMY_HTTP_PORT``, else this
    machine only on 8080 (the settings' host default, every interface, suits the deployed
    gateway, not a newcomer's laptop)."""
    host = args.host or (settings.http_host if os.environ.get("RUMMY_HTTP_HOST") else LOCAL)
    return host, args.port or settings.http_port or DEFAULT_PORT
