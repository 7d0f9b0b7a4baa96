"""`rummy archive`: the archive of finished games by hand (``docs/archive.md``).

- ``now``: one archiver pass at once over REDIS_URL's games: every finished game not archived
  yet is archived (audited, stored, read back) and those kept past ``RUMMY_RETAIN_SECONDS``
  leave Redis; a progress bar on stderr (tqdm) while it works, on a terminal. The same steps
  as the archiver service, so running both at once is safe.
- ``list``: finished games by date, rule set, player or winner, newest first, a page at a time.
- ``fetch GAME``: the game's record (``.rrec``) as archived, to stdout or a file.

Exit codes as the audit commands': 0 done, 1 a game could not be archived (``now``) or is not
archived (``fetch``), 2 bad input (a setting missing, a bad date or limit).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from shared.cli.audit import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, CliError

BAR_FROM = 20  # due games from which `now` draws a progress bar

if TYPE_CHECKING:
    from shared.archive.base import Archive


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rummy archive` and its three commands."""
    p = sub.add_parser(
        "archive",
        help="the archive of finished games: archive now, list, fetch a record",
        description="Works on the archive at RUMMY_ARCHIVE_URL (postgresql://... or "
        "sqlite:///path); `now` also needs REDIS_URL. See docs/archive.md.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    now = actions.add_parser(
        "now",
        help="archive every finished game now; forget those kept past RUMMY_RETAIN_SECONDS",
    )
    now.add_argument("--keep", action="store_true", help="archive only: leave every game in Redis")
    listing = actions.add_parser("list", help="finished games, newest first")
    listing.add_argument("--since", metavar="DATE", help="finished on or after (ISO 8601)")
    listing.add_argument("--until", metavar="DATE", help="finished before (ISO 8601)")
    listing.add_argument("--rules", metavar="NAME", help="of this rule set")
    listing.add_argument("--player", metavar="NAME", help="with this player")
    listing.add_argument("--winner", metavar="NAME", help="won by this player")
    listing.add_argument("--limit", type=int, default=50, metavar="N", help="games (1-200)")
    listing.add_argument("--cursor", metavar="NEXT", help="the 'next' of the page before")
    listing.add_argument("--json", action="store_true", help="the page as JSON")
    fetch = actions.add_parser("fetch", help="write a game's archived record (.rrec)")
    fetch.add_argument("game", metavar="GAME", help="the game id")
    fetch.add_argument("-o", "--output", metavar="FILE", help="write to FILE, not stdout")


def run(args: argparse.Namespace) -> int:
    """Run ``rummy archive ACTION``."""
    from shared.archive.base import ArchiveError, QueryError
    from shared.archive.opening import ArchiveUrlError

    try:
        return asyncio.run(_run(args))
    except (CliError, ArchiveUrlError, QueryError) as err:
        print(f"rummy archive {args.action}: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (ArchiveError, OSError) as err:
        print(f"rummy archive {args.action}: {err}", file=sys.stderr)
        return EXIT_FAILED


async def _run(args: argparse.Namespace) -> int:
    from shared.archive.opening import open_archive
    from shared.infra.settings import Settings, SettingsError

    try:
        settings = Settings.from_env()
    except SettingsError as err:
        raise CliError(str(err)) from None
    if not settings.archive_url:
        raise CliError("set RUMMY_ARCHIVE_URL (postgresql://... or sqlite:///path)")
    archive = open_archive(settings.archive_url)
    await archive.open()
    try:
        if args.action == "now":
            return await _now(archive, -1.0 if args.keep else settings.retain_seconds)
        if args.action == "list":
            return await _list(archive, args)
        return await _fetch(archive, args)
    finally:
        await archive.close()


def moment(text: str | None, name: str) -> float | None:
    """An ISO 8601 date or time as unix seconds (UTC unless it says otherwise)."""
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise CliError(
            f"--{name} {text!r} is not a date: give ISO 8601, e.g. 2026-12-01 or 2026-12-01T18:30"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


async def _list(archive: Archive, args: argparse.Namespace) -> int:
    from shared.archive.base import Query

    query = Query(
        since=moment(args.since, "since"),
        until=moment(args.until, "until"),
        rules=args.rules,
        player=args.player,
        winner=args.winner,
        limit=args.limit,
        cursor=args.cursor,
    )
    page = await archive.listing(query)
    if args.json:
        print(json.dumps(page.to_json()))
        return EXIT_OK
    for entry in page.entries:
        when = datetime.fromtimestamp(entry.finished, UTC).strftime("%Y-%m-%d %H:%M:%S")
        won = ", ".join(entry.winners) or "-"
        print(f"{entry.game_id}  {when}  {entry.rules:<16} {', '.join(entry.players)}  won: {won}")
    if page.next is not None:
        print(f"more: --cursor '{page.next}'", file=sys.stderr)
    return EXIT_OK


async def _fetch(archive: Archive, args: argparse.Namespace) -> int:
    from shared.audit.record import write_record
    from shared.infra.keys import check_game_id

    try:
        check_game_id(args.game)
    except ValueError as err:
        raise CliError(str(err)) from None
    record = await archive.fetch(args.game)
    if record is None:
        print(f"rummy archive fetch: game {args.game} is not archived", file=sys.stderr)
        return EXIT_FAILED
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            write_record(record, out)
        print(f"wrote {len(record.events)} events of game {args.game} to {args.output}")
    else:
        write_record(record, sys.stdout)
    return EXIT_OK


async def _now(archive: Archive, retain_seconds: float) -> int:
    from shared.archive.mover import FAILED, REFUSED, Mover
    from shared.cli.audit import open_client
    from shared.cli.progress import bar as progress_bar
    from shared.infra.connection import disconnect
    from shared.infra.keys import Keys

    client, prefix = open_client()
    counts: dict[str, Any] = {}
    try:
        mover = Mover(client, Keys(prefix), archive, retain_seconds)
        await mover.sweep()
        total = (await mover.retention.sizes())["due"]
        # A bar on stderr for a long run watched on a terminal; nothing in a pipe or a log.
        quiet = total < BAR_FROM
        with progress_bar(total, "games archived", unit="game", quiet=quiet) as bar:
            while True:
                done = await mover.archive_due(100)
                for outcome, n in done.items():
                    counts[outcome] = counts.get(outcome, 0) + n
                bar.update(sum(done.values()))
                if FAILED in done or sum(done.values()) < 100:  # refused: tried again later
                    break
        counts["forgotten"] = 0
        while gone := await mover.forget_expired(100):
            counts["forgotten"] += gone
        counts.update(await mover.retention.sizes())
    finally:
        await disconnect(client)
    print(json.dumps(counts, sort_keys=True))
    return EXIT_FAILED if counts.get(FAILED) or counts.get(REFUSED) else EXIT_OK
