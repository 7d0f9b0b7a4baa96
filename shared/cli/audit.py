"""`rummy replay`, `rummy audit`, `rummy export`, `rummy verify`, `rummy import`: settle
disputes from a game's log, in the store at ``REDIS_URL`` or in a game record file.

Exit codes: 0 when everything holds, 1 when a check fails (the message names the first bad
event), 2 for bad input (an unknown game, a malformed record or receipt, a missing
``REDIS_URL``). Everything heavy is imported when a command runs, so that
building the parser (and `rummy judge`) stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from shared.archive.base import Archive
    from shared.audit.record import GameRecord
    from shared.audit.tournament import TournamentAudit
    from shared.audit.verify import Audit, Receipt
    from shared.infra.client import RedisClient
    from shared.infra.store.redis import RedisEventStore

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
NAMES = ("replay", "audit", "export", "verify", "import")
T = TypeVar("T")


class CliError(Exception):
    """Bad input: the message is printed on stderr and the command exits 2."""


# --- the parsers ---------------------------------------------------------------------------------


def _receipt_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--receipt",
        action="append",
        default=[],
        metavar="VERSION:HASH",
        help="a chain head a player kept (the version and head of a view or a command answer); "
        "any number of times",
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the five commands (once, however many ``COMMANDS`` entries point here)."""
    if "replay" in sub.choices:
        return
    replay = sub.add_parser(
        "replay",
        help="replay one turn (or the command behind one version) of a game, re-judged",
        description="Shows the table, hands, stock and scores just before and after turn N (as "
        "the views number turns, from 1 across the game) or the command behind version V, every "
        "command in it with its verdict re-judged by today's rules core (rummy judge's shape), "
        "and a diff of the table. GAME is a game id in the store at REDIS_URL or a .rrec file.",
    )
    replay.add_argument("game", metavar="GAME", help="a game id, or the path of a game record")
    which = replay.add_mutually_exclusive_group(required=True)
    which.add_argument("--turn", type=int, metavar="N", help="the turn number")
    which.add_argument("--version", type=int, metavar="V", help="an event version")
    view = replay.add_mutually_exclusive_group()
    view.add_argument("--seat", type=int, metavar="S", help="show only what seat S may see")
    view.add_argument("--spectator", action="store_true", help="show what a spectator may see")
    replay.add_argument("--json", action="store_true", help="print the whole structure as JSON")
    replay.add_argument(
        "--svg",
        metavar="FILE",
        help="also draw the turn as a picture (SVG) into FILE, as the viewer may see it",
    )

    audit = sub.add_parser(
        "audit",
        help="verify a stored game: hash chain, head, receipts, replay, seed, scores",
        description="Runs every check on a game in the store at REDIS_URL (or a .rrec file) and "
        "prints a verdict per check. Exit 1 naming the first bad event if any check fails.",
    )
    audit.add_argument("game", metavar="GAME", nargs="?", help="a game id or a record file")
    audit.add_argument("--all", action="store_true", help="audit every game in the store")
    audit.add_argument(
        "--tournament",
        metavar="ID",
        help="audit a tournament: its log's chain, every table's game, every table result and "
        "every standing recomputed from the games and the rulings",
    )
    _receipt_arg(audit)
    audit.add_argument("--json", action="store_true", help="print the verdicts as JSON")

    export = sub.add_parser(
        "export",
        help="write a stored game as a portable game record (JSON lines) on stdout",
        description="Reads the game from the store at REDIS_URL and writes its record "
        "(docs/record-format.md): rummy export GAME > game.rrec",
    )
    export.add_argument("game", metavar="GAME", help="the game id")
    export.add_argument("-o", "--output", metavar="FILE", help="write to FILE, not stdout")

    verify = sub.add_parser(
        "verify",
        help="verify a game record offline (the same checks as audit, and its header)",
        description="Checks a .rrec file with nothing but this package: the hash chain, the "
        "head line, the header, receipts, the replay, the seed and the scores.",
    )
    verify.add_argument("file", metavar="FILE", help="the game record")
    _receipt_arg(verify)
    verify.add_argument("--json", action="store_true", help="print the verdicts as JSON")

    load = sub.add_parser(
        "import",
        help="append a game record's events to the store at REDIS_URL, hashes unchanged",
        description="Refuses a game that exists already or a record whose chain or head does "
        "not hold; checks the store's head after the import.",
    )
    load.add_argument("file", metavar="FILE", help="the game record")


def run(args: argparse.Namespace) -> int:
    """Run the command ``args.command``."""
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "replay": _replay,
        "audit": _audit,
        "export": _export,
        "verify": _verify,
        "import": _import,
    }
    from shared.audit.record import RecordError
    from shared.audit.replay import ReplayError
    from shared.audit.source import SourceError

    try:
        return handlers[args.command](args)
    except (CliError, RecordError, ReplayError, SourceError) as err:
        print(f"rummy {args.command}: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as err:
        print(f"rummy {args.command}: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT


# --- plumbing ------------------------------------------------------------------------------------


def open_client() -> tuple[RedisClient, str]:
    """A Redis client for ``REDIS_URL`` and the key prefix (tests replace this function)."""
    from shared.infra.connection import connect
    from shared.infra.settings import Settings, SettingsError

    try:
        settings = Settings.from_env()
    except SettingsError as err:
        raise CliError(str(err)) from None
    if settings.redis_url is None:
        raise CliError("REDIS_URL is not set: point it at the Redis that holds the games")
    return connect(settings), settings.prefix


def _with_store(work: Callable[[RedisEventStore], Awaitable[T]]) -> T:
    import asyncio

    from shared.infra.connection import disconnect
    from shared.infra.store.redis import RedisEventStore

    client, prefix = open_client()

    async def main() -> T:
        try:
            return await work(RedisEventStore(client, prefix))
        finally:
            await disconnect(client)

    return asyncio.run(main())


def _archive() -> Archive | None:
    """The archive ``RUMMY_ARCHIVE_URL`` names (not opened yet), or None when it names none."""
    from shared.archive.opening import ArchiveUrlError, open_archive
    from shared.infra.settings import Settings, SettingsError

    try:
        url = Settings.from_env().archive_url
        return open_archive(url) if url else None
    except (SettingsError, ArchiveUrlError) as err:
        raise CliError(f"RUMMY_ARCHIVE_URL: {err}") from None


async def _from_archive(game_id: str) -> GameRecord | None:
    """The game's archived record, when ``RUMMY_ARCHIVE_URL`` names an archive that has it:
    a finished game whose log Redis has let go is read, audited and exported by id all the
    same."""
    from shared.archive.base import ArchiveError

    archive = _archive()
    if archive is None:
        return None
    try:
        await archive.open()
        return await archive.fetch(game_id)
    except ArchiveError as err:
        raise CliError(f"the archive: {err}") from None
    finally:
        await archive.close()


async def _stored(store: Any, game_id: str) -> Any:
    """The game as the store holds it, else as the archive does (``SourceError`` if neither
    has it)."""
    from shared.audit.source import SourceError, StoredGame, load_game

    try:
        return await load_game(store, game_id)
    except SourceError:
        record = await _from_archive(game_id)
        if record is None or record.head is None:
            raise
        return StoredGame(game_id, record.events, record.head)


async def _exported(store: Any, game_id: str) -> GameRecord:
    """The game's record from the store, else the archived one."""
    from shared.audit.source import SourceError, export_game

    try:
        return await export_game(store, game_id)
    except SourceError:
        record = await _from_archive(game_id)
        if record is None:
            raise
        return record


def _receipts(texts: list[str]) -> list[Receipt]:
    from shared.audit.verify import Receipt

    try:
        return [Receipt.parse(text) for text in texts]
    except ValueError as err:
        raise CliError(str(err)) from None


def _is_file(game: str) -> bool:
    return os.path.isfile(game) or game.endswith(".rrec")


def _record(path: str) -> GameRecord:
    from shared.audit.record import read_record

    return read_record(path)


def _log(game: str) -> tuple[list[Any], str]:
    """The events of GAME (a record file or a stored game) and where they came from."""
    if _is_file(game):
        return list(_record(game).events), game
    stored = _with_store(lambda store: _stored(store, game))
    if stored.defects:
        version, why = stored.defects[0]
        raise CliError(f"version {version} cannot be read ({why}); run rummy audit {game}")
    return list(stored.events), f"game {game}"


# --- replay --------------------------------------------------------------------------------------


def _replay(args: argparse.Namespace) -> int:
    from shared.audit.replay import SPECTATOR, replay

    events, _ = _log(args.game)
    viewer: Any = args.seat if args.seat is not None else (SPECTATOR if args.spectator else None)
    result = replay(events, turn=args.turn, version=args.version, viewer=viewer)
    if args.svg:
        from shared.pictures.turn import turn_picture

        with open(args.svg, "w", encoding="utf-8") as out:
            out.write(turn_picture(result))
        print(f"rummy replay: drew the turn into {args.svg}", file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(render_replay(result))
    return EXIT_OK


def _cards(cards: Any) -> str:
    if isinstance(cards, int):
        return f"{cards} card(s), hidden"
    return " ".join(cards) if cards else "-"


def _snapshot_lines(title: str, snap: dict[str, Any], players: list[str]) -> list[str]:
    pile = snap["pile"]
    scores = ", ".join(
        f"{players[i] if i < len(players) else i} {score if score is not None else '-'}"
        for i, score in enumerate(snap["scores"])
    )
    lines = [
        f"{title} (version {snap['version']}): stock {snap['stock']}, pile {pile['count']}"
        f" (top {pile['top'] or '-'}); scores: {scores}",
        "  table:" + ("" if snap["table"] else " empty"),
    ]
    lines += [f"    {i}) {' '.join(meld)}" for i, meld in enumerate(snap["table"], start=1)]
    for seat, count in enumerate(snap["hand_counts"]):
        hand = snap["hands"].get(str(seat))
        name = players[seat] if seat < len(players) else "?"
        shown = " ".join(hand) if hand is not None else "hidden"
        lines.append(f"  seat {seat} {name} ({count}): {shown}")
    if "stock_cards" in snap:
        lines.append(f"  stock, top first: {' '.join(snap['stock_cards']) or '-'}")
    return lines


def _verdict_line(verdict: dict[str, Any]) -> str:
    if verdict.get("hidden"):
        return f"illegal ({verdict['code']}); the layout stays hidden while the game is live"
    if not verdict["legal"]:
        return f"illegal ({verdict['code']}): {verdict['reason']}"
    parts = [f"played {_cards(verdict['played'])}"]
    if verdict["to_hand"]:
        parts.append(f"to the hand {_cards(verdict['to_hand'])}")
    if verdict["points"] is not None:
        parts.append(f"{verdict['points']} points")
    if verdict["opening"]:
        parts.append("opening")
    if verdict["out"]:
        parts.append("goes out")
    return "legal: " + ", ".join(parts)


def render_replay(result: dict[str, Any]) -> str:
    """The replay for a terminal: before, the commands and their verdicts, the diff, after."""
    players = result["players"]
    rules = result["rules"]
    options = ", ".join(f"{k}={v}" for k, v in rules["options"].items())
    first, last = result["versions"]
    seat = result["seat"]
    who = f"seat {seat} ({players[seat]})" if isinstance(seat, int) else "no seat"
    head = f"turn {result['turn']}" if result["turn"] is not None else "no turn"
    lines = [
        f"Game {result['game_id']} ({rules['name']}{': ' + options if options else ''}), "
        f"{head}, round {result['round']}, {who}; versions {first}-{last}",
        f"Shown to: {result['viewer']} (game {result['status']})",
        "",
        *_snapshot_lines("Before", result["before"], players),
        "",
        "Commands:" if result["commands"] else "Commands: none yet",
    ]
    for command in result["commands"]:
        a, b = command["versions"]
        span = f"v{a}" if a == b else f"v{a}-{b}"
        by = f" by seat {command['seat']}" if command["seat"] is not None else ""
        outcome = command["outcome"].upper() if command["outcome"] == "rejected" else "accepted"
        lines.append(f"  {span} {command['kind']}{by}: {outcome} at {command['time']}")
        types = ", ".join(e["type"] for e in command["events"])
        lines.append(f"      events: {types}")
        if "layout" in command:
            melds = " | ".join(" ".join(m) for m in command["layout"])
            lines.append(f"      layout: {melds}")
        if command["verdict"] is not None:
            agrees = "agrees with the record" if command["agrees"] else "DIFFERS FROM THE RECORD"
            lines.append(f"      re-judged: {_verdict_line(command['verdict'])} [{agrees}]")
        for move in command["moves"]:
            lines.append(f"      {_cards(move['cards'])}: {move['from']} -> {move['to']}")
    diff = result["diff"]
    lines += ["", "Table diff:"]
    if not diff["removed"] and not diff["added"]:
        lines.append("  the table did not change")
    lines += [f"  - meld {m['meld']}: {' '.join(m['cards'])}" for m in diff["removed"]]
    lines += [f"  + meld {m['meld']}: {' '.join(m['cards'])}" for m in diff["added"]]
    for move in diff["moves"]:
        lines.append(f"  {_cards(move['cards'])}: {move['from']} -> {move['to']}")
    lines += ["", *_snapshot_lines("After", result["after"], players)]
    return "\n".join(lines)


# --- audit and verify ----------------------------------------------------------------------------


def render_audit(audit: Audit, source: str) -> str:
    """One line per check, then the first bad event if any."""
    head = f"{audit.head[0]}:{audit.head[1][:12]}…" if audit.head else "unknown"
    lines = [f"{source}: {audit.events} events, head {head}"]
    for verdict in audit.verdicts:
        status = "FAILED" if verdict.failed else verdict.status
        where = f" at version {verdict.version}" if verdict.failed and verdict.version else ""
        lines.append(f"  {verdict.check:<9} {status:<10} {verdict.message}{where}")
        lines += [f"  {'':<9} {'note':<10} {note}" for note in verdict.notes]
    bad = audit.first_bad()
    if bad is None:
        lines.append("every check holds")
    else:
        where = f"version {bad.version}" if bad.version is not None else "no single event"
        lines.append(f"FAILED: first bad event: {where} ({bad.check}: {bad.message})")
    return "\n".join(lines)


def _report(audits: list[tuple[Audit, str]], as_json: bool, many: bool = False) -> int:
    if as_json:
        docs = [a.to_json() | {"source": source} for a, source in audits]
        print(json.dumps(docs if many else docs[0], indent=2))
    else:
        print("\n\n".join(render_audit(a, source) for a, source in audits))
    failed = [(a, source) for a, source in audits if not a.ok]
    if many and not as_json:
        print(f"\n{len(audits)} games audited, {len(failed)} failed")
    for audit, source in failed:
        bad = audit.first_bad()
        assert bad is not None
        print(
            f"rummy audit: {source} failed {bad.check} at version {bad.version}",
            file=sys.stderr,
        )
    return EXIT_FAILED if failed else EXIT_OK


def _verify_file(path: str, receipts: list[Receipt]) -> tuple[Audit, str]:
    from shared.audit.verify import audit_record

    return audit_record(_record(path), receipts), path


def _audit(args: argparse.Namespace) -> int:
    from shared.audit.verify import audit_log

    receipts = _receipts(args.receipt)
    if args.tournament is not None:
        if args.game is not None or args.all or receipts:
            raise CliError(
                "--tournament ID audits one tournament: give no GAME, --all or --receipt"
            )
        return _audit_tournament(args.tournament, args.json)
    if args.all == (args.game is not None):
        raise CliError("give one GAME, or --all for every game in the store")
    if args.game is not None and _is_file(args.game):
        return _report([_verify_file(args.game, receipts)], args.json)
    if args.all and receipts:
        raise CliError("--receipt belongs to one game: give GAME instead of --all")

    async def work(store: Any) -> list[tuple[Audit, str]]:
        from shared.cli.progress import bar

        ids = await store.list_games() if args.all else [args.game]
        out = []
        with bar(len(ids), "games audited", unit="game", quiet=not args.all) as progress:
            for game_id in ids:
                try:
                    game = await _stored(store, game_id)
                except Exception as err:
                    if not args.all:
                        raise
                    progress.write(f"rummy audit: skipping {game_id}: {err}", file=sys.stderr)
                    progress.update(1)
                    continue
                audit = audit_log(
                    game.events,
                    game_id=game_id,
                    head=game.head,
                    receipts=receipts,
                    defects=game.defects,
                )
                out.append((audit, f"game {game_id}"))
                progress.update(1)
        return out

    audits = _with_store(work)
    if not audits:
        print("[]" if args.json else "no games in the store")
        return EXIT_OK
    return _report(audits, args.json, many=args.all)


def tournament_logs(prefix: str) -> str:
    """The key prefix of the tournaments' event store under the deployment's ``prefix`` (where
    the tournament service appends)."""
    from shared.infra.keys import Keys

    return Keys(prefix).tournament_logs()


def render_tournament(audit: TournamentAudit) -> str:
    """One line per check, one per difference, then the verdict."""
    head = f"{audit.head[0]}:{audit.head[1][:12]}…" if audit.head else "unknown"
    lines = [
        f"tournament {audit.tournament_id}: {audit.events} events, head {head}, "
        f"{len(audit.games)} table games"
    ]
    for verdict in audit.verdicts:
        status = "FAILED" if verdict.failed else verdict.status
        where = f" at version {verdict.version}" if verdict.failed and verdict.version else ""
        lines.append(f"  {verdict.check:<9} {status:<10} {verdict.message}{where}")
    for difference in audit.differences:
        values = ""
        if difference.field in ("head", "seats"):  # the only messages that do not say both
            values = f" [recorded {difference.recorded!r}, recomputed {difference.recomputed!r}]"
        lines.append(f"  - {difference.where()}: {difference.message}{values}")
    if audit.ok:
        lines.append("every check holds")
    else:
        lines.append(f"FAILED: {len(audit.differences)} difference(s)")
    return "\n".join(lines)


def _audit_tournament(tournament_id: str, as_json: bool) -> int:
    from shared.archive.base import ArchiveError
    from shared.infra.tournaments import check_tournament_id
    from shared.tournament.commands import TournamentError

    try:
        check_tournament_id(tournament_id)
    except TournamentError as err:
        raise CliError(err.message) from None

    async def work(store: RedisEventStore) -> TournamentAudit:
        archive = _archive()
        try:
            if archive is not None:
                await archive.open()
            return await _tournament_audit(store, archive, tournament_id)
        except ArchiveError as err:
            raise CliError(f"the archive: {err}") from None
        finally:
            if archive is not None:
                await archive.close()

    audit = _with_store(work)
    if as_json:
        print(json.dumps(audit.to_json(), indent=2))
    else:
        print(render_tournament(audit))
    if audit.ok:
        return EXIT_OK
    first = audit.differences[0] if audit.differences else None
    named = f": {first.check} at {first.where()}" if first is not None else ""
    print(f"rummy audit: tournament {tournament_id} failed{named}", file=sys.stderr)
    return EXIT_FAILED


async def _tournament_audit(
    store: RedisEventStore, archive: Archive | None, tournament_id: str
) -> TournamentAudit:
    """The tournament's log as Redis holds it, else as the archive does (a finished tournament
    Redis has let go), and its tables' games wherever they are, audited."""
    from shared.archive.tournament_mover import full_audit, table_sources
    from shared.audit.source import SourceError, StoredGame, load_game
    from shared.audit.tournament import GameSource, table_games
    from shared.infra.store.redis import RedisEventStore

    logs = RedisEventStore(store.client, tournament_logs(store.keys.prefix))
    try:
        log = await load_game(logs, tournament_id)
    except SourceError:
        record = None if archive is None else await archive.fetch_tournament(tournament_id)
        if record is None:
            where = "this store" if archive is None else "this store, nor in the archive"
            raise CliError(f"there is no tournament {tournament_id!r} in {where}") from None
        log = StoredGame(tournament_id, record.events, record.head)
    ids = table_games(log.events)
    if archive is not None:
        return full_audit(log, await table_sources(store, archive, ids))
    games: dict[str, GameSource] = {}
    for game_id in ids:
        try:
            games[game_id] = await load_game(store, game_id)
        except SourceError as err:
            games[game_id] = str(err)
    return full_audit(log, games)


def _verify(args: argparse.Namespace) -> int:
    return _report([_verify_file(args.file, _receipts(args.receipt))], args.json)


# --- export, import, rebuild ---------------------------------------------------------------------


def _export(args: argparse.Namespace) -> int:
    from shared.audit.record import write_record

    if _is_file(args.game):
        raise CliError(f"{args.game} is a file; export reads a game id from REDIS_URL's store")
    record = _with_store(lambda store: _exported(store, args.game))
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            write_record(record, out)
        print(f"wrote {len(record.events)} events of game {args.game} to {args.output}")
    else:
        write_record(record, sys.stdout)
    return EXIT_OK


def _import(args: argparse.Namespace) -> int:
    from shared.audit.source import import_record
    from shared.audit.verify import audit_record

    record = _record(args.file)
    audit = audit_record(record)
    broken = [v for v in audit.verdicts if v.failed and v.check in ("chain", "head")]
    if broken:
        print(render_audit(audit, args.file))
        raise CliError(
            f"refusing to import: the record's {broken[0].check} fails at version "
            f"{broken[0].version}"
        )
    head = _with_store(lambda store: import_record(store, record))
    if head != record.head:
        print(
            f"rummy import: the store's head is {head[0]}:{head[1]}, the record's is {record.head}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    print(f"imported game {record.game_id}: {head[0]} events, head {head[0]}:{head[1]}")
    others = [v for v in audit.verdicts if v.failed]
    if others:
        print(f"note: the record fails {', '.join(v.check for v in others)} (rummy verify)")
    return EXIT_OK
