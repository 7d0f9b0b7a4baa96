"""`rummy serve`: gateway, referee and scoring in one process, on the embedded Redis stand-in
(fakeredis with Lua) unless REDIS_URL is set. What `make run` starts."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from shared.infra.settings import Settings, SettingsError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rummy serve`."""
    p = sub.add_parser(
        "serve",
        help="run the whole service in one process (embedded Redis unless REDIS_URL is set)",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on")
    p.add_argument("--port", type=int, default=8080, help="port to listen on")
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
    referee = Referee(client, settings)
    scoring = Scoring(client, settings)
    workers = [asyncio.create_task(referee.run()), asyncio.create_task(scoring.run())]
    runner = await start_http(make_app(client, settings), host, port)
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
    try:
        asyncio.run(serve(settings, args.host, args.port))
    except OSError as err:
        print(f"rummy serve: cannot listen on {args.host}:{args.port}: {err}", file=sys.stderr)
        return 1
    return 0
