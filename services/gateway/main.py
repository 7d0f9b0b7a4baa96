"""`rummy gateway`: the public HTTP/WebSocket API as its own process, against REDIS_URL."""

from __future__ import annotations

import argparse
import asyncio
import sys

from shared.infra.settings import Settings, SettingsError

DEFAULT_PORT = 8080


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rummy gateway`."""
    p = sub.add_parser(
        "gateway",
        help="run the public API (needs REDIS_URL; settings from RUMMY_* variables)",
        description="Serves the API, /healthz, /readyz, /metrics and /openapi.json.",
    )
    p.add_argument("--host", default=None, help="address to listen on (default RUMMY_HTTP_HOST)")
    p.add_argument("--port", type=int, default=None, help="port (default 8080)")
    p.add_argument(
        "--allow-seeded-games",
        action="store_true",
        help="accept a fixed 'seed' at game creation (tests and demos only)",
    )


async def serve_gateway(settings: Settings, host: str, port: int) -> None:
    """Run the gateway until SIGTERM/SIGINT, then close every socket and exit."""
    import signal

    from services.gateway.app import make_app
    from shared.infra.connection import connect
    from shared.infra.observability import announce
    from shared.infra.serving import start_http

    client = connect(settings)
    runner = await start_http(make_app(client, settings), host, port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    announce("gateway listening", url=f"http://{host}:{port}/")
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
        await client.aclose()


def run(args: argparse.Namespace) -> int:
    """Run until SIGTERM."""
    overrides: dict[str, object] = {}
    if args.allow_seeded_games:
        overrides["allow_seeded_games"] = True
    try:
        settings = Settings.from_env(None, **overrides)
    except SettingsError as err:
        print(f"rummy gateway: {err}", file=sys.stderr)
        return 2
    if settings.redis_url is None:
        print("rummy gateway: set REDIS_URL (or use `rummy serve`)", file=sys.stderr)
        return 2
    from shared.infra.observability import configure_logging

    configure_logging(settings.log_level)
    host = args.host or settings.http_host
    asyncio.run(serve_gateway(settings, host, args.port or settings.http_port or DEFAULT_PORT))
    return 0
