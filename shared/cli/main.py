"""The `rummy` command's tools (judge, solve, simulate, score, loadtest, the audit commands) and
the dispatch every `rummy` runs through: one subcommand per module.

Each module listed in a command table defines ``register(subparsers)`` (adds its parser) and
``run(args) -> int`` (the exit code). Modules are imported lazily so `rummy judge` never pays
for aiohttp or Redis. The console script is ``services.main``: these tools and the services'
commands in one table (this package knows nothing of the services).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Collection, Mapping

from shared.infra.runtime import configure_solver, fast_event_loop, quiet_gc
from shared.infra.settings import Settings, SettingsError

COMMANDS: dict[str, str] = {
    "judge": "shared.cli.judge",
    "solve": "shared.cli.solve",
    "simulate": "shared.cli.simulate",
    "score": "shared.cli.score",
    "loadtest": "shared.cli.loadtest",
    "replay": "shared.cli.audit",
    "audit": "shared.cli.audit",
    "export": "shared.cli.audit",
    "verify": "shared.cli.audit",
    "import": "shared.cli.audit",
    "archive": "shared.cli.archive",
}

NETWORKED = frozenset({"loadtest"})
"""The commands that spend their time in the event loop's socket work (uvloop's gain)."""


def build_parser(commands: Mapping[str, str] = COMMANDS) -> argparse.ArgumentParser:
    """All subcommands of ``commands`` and their flags."""
    parser = argparse.ArgumentParser(
        prog="rummy", description="Referee, score and replay Robbers' Rummy and Rummikub."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in commands.values():
        importlib.import_module(module).register(sub)
    return parser


def main(
    argv: list[str] | None = None,
    commands: Mapping[str, str] = COMMANDS,
    networked: Collection[str] = NETWORKED,
) -> int:
    """Run the subcommand ``argv`` names from ``commands`` (``networked``: those that get the
    fast event loop and the quiet collector)."""
    parser = build_parser(commands)
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
    module = importlib.import_module(commands[args.command])
    if args.command in networked:
        fast_event_loop(settings)
        quiet_gc(settings)
    code: int = module.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
