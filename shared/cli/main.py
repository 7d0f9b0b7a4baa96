"""The `rummy` command: one subcommand per tool, each in its own module.

Each module listed in ``COMMANDS`` defines ``register(subparsers)`` (adds its parser) and
``run(args) -> int`` (the exit code). Modules are imported lazily so `rummy judge` never pays
for aiohttp or Redis.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from shared.infra.runtime import configure_solver, fast_event_loop, quiet_gc
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
