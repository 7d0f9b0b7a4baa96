"""`rummy serve`: gateway, referee and scoring in one process, on the embedded Redis stand-in
(fakeredis with Lua) unless REDIS_URL is set. What `make run` starts."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys

from shared.infra.settings import Settings, SettingsError

LOCAL = "127.0.0.1"
DEFAULT_PORT = 8080


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


async def serve(settings: Settings, host: str, port: int) -> None:
    """Run the three services until Ctrl-C or SIGTERM, then stop them in order."""
    import structlog

    from services.gateway.app import make_app
    from services.referee.referee import Referee
    from services.scoring.scoring import Scoring
    from shared.infra.connection import connect
    from shared.infra.observability import announce
    from shared.infra.serving import start_http

    client = connect(settings)
    try:  # the port first: a busy one stops here, before any loop runs that would need stopping
        runner = await start_http(make_app(client, settings), host, port)
    except OSError:
        await client.aclose()
        raise
    referee = Referee(client, settings)
    scoring = Scoring(client, settings)
    workers = [asyncio.create_task(referee.run()), asyncio.create_task(scoring.run())]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    where = "an embedded Redis stand-in" if settings.redis_url is None else settings.redis_url
    announce(
        f"Robbers' Rummy is running on {where}: open http://{host}:{port}/ (API at"
        f" http://{host}:{port}/api/games, description at /openapi.json). Ctrl-C stops it.",
        url=f"http://{host}:{port}/",
    )
    try:
        await stop.wait()
    finally:
        structlog.get_logger("serve").info("stopping")
        await runner.cleanup()
        referee.stop()
        scoring.stop()
        await asyncio.gather(*workers, return_exceptions=True)
        await client.aclose()


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    overrides: dict[str, object] = {}
    if args.allow_seeded_games:
        overrides["allow_seeded_games"] = True
    try:
        settings = Settings.from_env(None, **overrides)
    except SettingsError as err:
        print(f"rummy serve: {err}", file=sys.stderr)
        return 2
    from shared.infra.observability import configure_logging

    configure_logging(settings.log_level)
    host, port = listen_address(args, settings)
    try:
        asyncio.run(serve(settings, host, port))
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
