"""The `rummy` command: one subcommand per tool, each in its own module.

Each module listed in ``COMMANDS`` defines ``register(subparsers)`` (adds its parser) and
``run(args) -> int`` (the exit code). Modules are imported lazily so `rummy judge` never pays
for aiohttp or Redis.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import os
import sys

COMMANDS: dict[str, str] = {
    "judge": "shared.cli.judge",
    "solve": "shared.cli.solve",
    "simulate": "shared.cli.simulate",
    "score": "shared.cli.score",
    "referee": "services.referee.main",
    "scoring": "services.scoring.main",
    "gateway": "services.gateway.main",
    "serve": "services.serve",
    "loadtest": "shared.cli.loadtest",
    "replay": "shared.cli.audit",
    "audit": "shared.cli.audit",
    "export": "shared.cli.audit",
    "verify": "shared.cli.audit",
    "import": "shared.cli.audit",
    "rebuild": "shared.cli.audit",
}

NETWORKED = frozenset({"referee", "scoring", "gateway", "serve", "loadtest"})
"""The commands that spend their time in the event loop's socket work (uvloop's gain)."""


def fast_event_loop() -> None:
    """Run asyncio on uvloop (libuv; a well-kept drop-in loop) where it is installed: the
    services spend much of each turn in the loop's own socket and callback work, which uvloop
    does in C. ``RUMMY_EVENT_LOOP=asyncio`` keeps the standard loop."""
    if os.environ.get("RUMMY_EVENT_LOOP", "uvloop") == "asyncio":
        return
    try:
        import uvloop
    except ImportError:  # not on every platform (Windows): the standard loop then
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


GC_THRESHOLDS = (50_000, 20, 20)
"""Young-generation collections every 50,000 net allocations instead of 700 (Python's default)."""


def quiet_gc() -> None:
    """Collect cyclic garbage less often in the long-running networked commands.

    Every turn allocates thousands of short-lived dicts and tuples (decoded events, views,
    Redis replies) that reference counting frees at once; with the default threshold the
    collector still ran hundreds of times a second, walking the games cached in memory, and
    took about a tenth of the gateway's CPU (measured with ``perf``). What the process loaded
    before serving (modules, rule sets) is frozen out of the collector's walks for good.
    ``RUMMY_GC=default`` keeps Python's settings; ``RUMMY_GC=a,b,c`` sets other thresholds."""
    setting = os.environ.get("RUMMY_GC", "")
    if setting == "default":
        return
    thresholds = GC_THRESHOLDS
    if setting:
        parts = [p.strip() for p in setting.split(",")]
        whole = len(parts) == 3 and all(p.isascii() and p.isdigit() for p in parts)
        if not whole or int(parts[0]) == 0:
            raise SystemExit(
                f"RUMMY_GC is {setting!r}; allowed: 'default', or three whole numbers "
                "(the collector's thresholds, the first above 0) such as '50000,20,20'"
            )
        thresholds = (int(parts[0]), int(parts[1]), int(parts[2]))
    gc.collect()
    gc.freeze()
    gc.set_threshold(*thresholds)


def build_parser() -> argparse.ArgumentParser:
    """All subcommands and their flags."""
    parser = argparse.ArgumentParser(
        prog="rummy", description="Referee, score and replay Robbers' Rummy and Rummikub."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS.values():
        importlib.import_module(module).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    module = importlib.import_module(COMMANDS[args.command])
    if args.command in NETWORKED:
        fast_event_loop()
        quiet_gc()
    code: int = module.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
