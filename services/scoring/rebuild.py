"""`rummy rebuild` (and `rummy scoring --rebuild`): rebuild every projection of the scoring
service from the game logs and report what differed.

Exit codes as the audit commands': 0 when the live projections were what the logs give, 1 when
they differed (they are repaired either way), 2 for bad input (no ``REDIS_URL``). It connects
through ``shared.cli.audit.open_client``, as the audit commands do (tests replace that one).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from shared.archive.base import ArchiveError
from shared.cli import audit


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rummy rebuild`."""
    sub.add_parser(
        "rebuild",
        help="rebuild every projection from the logs and report differences",
        description="Drops the standings, leaderboard, player statistics and ratings of the "
        "store at REDIS_URL and rebuilds them from the game logs (and the archived games of "
        "RUMMY_ARCHIVE_URL, when set); prints {games, differences, "
        "games_differing}; exit 0 if the live projections were what the logs give, 1 if they "
        "differed (they are repaired either way), 2 for bad input (no REDIS_URL). "
        "`rummy scoring --rebuild` is the same command.",
    )


def run(args: argparse.Namespace) -> int:
    """Rebuild, print the report, exit as the report says."""
    try:
        return _rebuild()
    except (audit.CliError, OSError, ArchiveError) as err:
        print(f"rummy rebuild: {err}", file=sys.stderr)
        return audit.EXIT_BAD_INPUT


def _rebuild() -> int:
    from services.scoring.scoring import Scoring
    from shared.archive.opening import open_archive
    from shared.infra.connection import disconnect
    from shared.infra.settings import Settings

    client, prefix = audit.open_client()

    async def main() -> dict[str, Any]:
        from shared.cli.progress import bar

        archive = None
        try:
            settings = Settings.from_env(prefix=prefix)
            if settings.archive_url:  # the games Redis let go count too
                archive = open_archive(settings.archive_url)
                await archive.open()
            with bar(None, "games rebuilt", unit="game") as progress:

                def done(number: int, of: int) -> None:
                    progress.total = of
                    progress.update(number - progress.n)

                return await Scoring(client, settings).rebuild(archive, done)
        finally:
            if archive is not None:
                await archive.close()
            await disconnect(client)

    report = asyncio.run(main())
    print(json.dumps(report))
    if report["differences"]:
        games = report.get("games_differing") or []
        named = f" (standings of {', '.join(games)})" if games else ""
        print(
            f"rummy rebuild: the live projections differed in "
            f"{', '.join(report['differences'])}{named}; rebuilt from the logs",
            file=sys.stderr,
        )
        return audit.EXIT_FAILED
    return audit.EXIT_OK
