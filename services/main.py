"""The `rummy` console script: shared's tools and the services' own commands in one table.

The services register here, not in ``shared``: the shared layers never import a service.
"""

from __future__ import annotations

import argparse
import sys

from shared.cli import main as tools

SERVICES: dict[str, str] = {
    "referee": "services.referee.main",
    "scoring": "services.scoring.main",
    "archiver": "services.archiver.main",
    "bots": "services.bots.main",
    "tournaments": "services.tournament.main",
    "gateway": "services.gateway.main",
    "serve": "services.serve",
    "rebuild": "services.scoring.rebuild",
}

ORDER = (
    *("judge", "solve", "simulate", "score"),
    *("referee", "scoring", "archiver", "bots", "tournaments", "gateway", "serve"),
    *("loadtest", "replay", "audit", "export", "verify", "import", "rebuild", "archive"),
)
"""The order `rummy --help` lists them in: the offline tools, the services, the operators'."""

COMMANDS: dict[str, str] = {name: {**tools.COMMANDS, **SERVICES}[name] for name in ORDER}

NETWORKED = tools.NETWORKED | {
    *("referee", "scoring", "archiver", "bots", "tournaments", "gateway", "serve"),
}
"""The commands that spend their time in the event loop's socket work (uvloop's gain)."""


def build_parser() -> argparse.ArgumentParser:
    """Every `rummy` subcommand and its flags."""
    return tools.build_parser(COMMANDS)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    return tools.main(argv, COMMANDS, NETWORKED)


if __name__ == "__main__":
    sys.exit(main())
