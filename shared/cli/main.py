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
import sys

from shared.infra.settings import Settings, SettingsError

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


def fast_event_loop(settings: Settings | None = None) -> None:
    """Run asyncio on uvloop (libuv; a well-kept drop-in loop) where it is installed: the
    services spend much of each turn in the loop's own socket and callback work, which uvloop
    does in C. ``RUMMY_EVENT_LOOP=asyncio`` keeps the standard loop. (``settings``: the
    process's; read from the environment when not given.)"""
    if (Settings.from_env() if settings is None else settings).event_loop == "asyncio":
        return
    try:
        import uvloop
    except ImportError:  # not on every platform (Windows): the standard loop then
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def quiet_gc(settings: Settings | None = None) -> None:
    """Collect cyclic garbage less often in the long-running networked commands.

    Every turn allocates thousands of short-lived dicts and tuples (decoded events, views,
    Redis replies) that reference counting frees at once; with the default threshold the
    collector still ran hundreds of times a second, walking the games cached in memory, and
    took about a tenth of the gateway's CPU (measured with ``perf``). What the process loaded
    before serving (modules, rule sets) is frozen out of the collector's walks for good.
    ``RUMMY_GC`` (default ``50000,20,20``: young-generation collections every 50,000 net
    allocations instead of 700) sets the thresholds; ``default`` keeps Python's settings.
    (``settings``: the process's; read from the environment when not given.)"""
    thresholds = (Settings.from_env() if settings is None else settings).gc_thresholds()
    if thresholds is None:
        return
    gc.collect()
    gc.freeze()
    gc.set_threshold(*thresholds)


def configure_solver(settings: Settings | None = None) -> None:
    """Have the solver load its inner modules as the settings say, at its first use: compiled
    when they are built from these very sources (in ``RUMMY_SOLVER_BUILD``, else the tree's
    ``build/solver/``) unless ``RUMMY_SOLVER=python``. Every process that may solve does this at
    its start, before any search: a worker process spawned to solve too (``settings`` not
    given: read from the environment, which a spawned process inherits)."""
    from shared.solver import configure

    chosen = Settings.from_env() if settings is None else settings
    configure(chosen.solver, chosen.solver_build)


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
    try:
        settings = Settings.from_env()
    except SettingsError as err:
        print(f"rummy {args.command}: {err}", file=sys.stderr)
        return 2
    configure_solver(settings)
    module = importlib.import_module(COMMANDS[args.command])
    if args.command in NETWORKED:
        fast_event_loop(settings)
        quiet_gc(settings)
    code: int = module.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
