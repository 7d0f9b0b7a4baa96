"""The archive's schema, as ordered migrations, and the SQL both backends share.

A database records the migrations it has had in ``schema_version`` (one row per step). Opening
an archive applies, in one transaction each, the steps it lacks, in order; a database at a
version newer than this program knows is refused, never "fixed" by an older program. A step is
never edited once released: a change is a new step at the end.

The SQL is written once, with ``?`` placeholders (SQLite's; the PostgreSQL backend turns them
into ``%s``) and ``{blob}`` for the binary type the two spell differently.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from shared.archive.base import ArchiveError, Entry, Query
from shared.archive.tournaments import TournamentEntry


@dataclass(frozen=True, slots=True)
class Migration:
    """One step of the schema: its version (1, 2, ...), a name and its statements."""

    version: int
    name: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "games and their players",
        (
            """CREATE TABLE games (
                game_id TEXT PRIMARY KEY,
                rules TEXT NOT NULL,
                finished DOUBLE PRECISION NOT NULL,
                events INTEGER NOT NULL,
                head TEXT NOT NULL,
                digest TEXT NOT NULL,
                record {blob} NOT NULL,
                archived DOUBLE PRECISION NOT NULL
            )""",
            """CREATE TABLE game_players (
                game_id TEXT NOT NULL REFERENCES games (game_id) ON DELETE CASCADE,
                seat INTEGER NOT NULL,
                name TEXT NOT NULL,
                won INTEGER NOT NULL,
                PRIMARY KEY (game_id, seat)
            )""",
        ),
    ),
    Migration(
        2,
        "what people look up: by date, rule set, player, winner",
        (
            "CREATE INDEX games_by_finished ON games (finished DESC, game_id DESC)",
            "CREATE INDEX games_by_rules ON games (rules, finished DESC, game_id DESC)",
            "CREATE INDEX players_by_name ON game_players (name, won)",
        ),
    ),
    Migration(
        3,
        "finished tournaments",
        (
            """CREATE TABLE tournaments (
                tournament_id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                rules TEXT NOT NULL,
                format TEXT NOT NULL,
                finished DOUBLE PRECISION NOT NULL,
                events INTEGER NOT NULL,
                head TEXT NOT NULL,
                digest TEXT NOT NULL,
                record {blob} NOT NULL,
                archived DOUBLE PRECISION NOT NULL,
                summary TEXT NOT NULL
            )""",
            "CREATE INDEX tournaments_by_finished ON tournaments "
            "(finished DESC, tournament_id DESC)",
        ),
    ),
)

LATEST = MIGRATIONS[-1].version

CREATE_VERSIONS = """CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied DOUBLE PRECISION NOT NULL
)"""
CURRENT_VERSION = "SELECT COALESCE(MAX(version), 0) FROM schema_version"
NOTE_VERSION = "INSERT INTO schema_version (version, name, applied) VALUES (?, ?, ?)"

INSERT_GAME = """INSERT INTO games
    (game_id, rules, finished, events, head, digest, record, archived)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (game_id) DO NOTHING"""
# A longer history of the game replaces its row only while the row is the one it extends.
REPLACE_GAME = """UPDATE games
    SET rules = ?, finished = ?, events = ?, head = ?, digest = ?, record = ?, archived = ?
    WHERE game_id = ? AND events = ? AND head = ?"""
DELETE_PLAYERS = "DELETE FROM game_players WHERE game_id = ?"


def insert_players_sql(count: int) -> str:
    """One statement for the ``count`` players of a game (one round trip, not ``count``)."""
    rows = ", ".join(["(?, ?, ?, ?)"] * count)
    return f"INSERT INTO game_players (game_id, seat, name, won) VALUES {rows}"


ENTRY_COLUMNS = "g.game_id, g.rules, g.finished, g.events, g.head, g.archived"
SELECT_ENTRY = f"SELECT {ENTRY_COLUMNS} FROM games g WHERE g.game_id = ?"
SELECT_BLOB = "SELECT record, digest FROM games WHERE game_id = ?"
COUNT = "SELECT COUNT(*) FROM games"


INSERT_TOURNAMENT = """INSERT INTO tournaments
    (tournament_id, name, rules, format, finished, events, head, digest, record, archived, summary)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (tournament_id) DO NOTHING"""
# As a game's: a longer history replaces the row only while the row is the one it extends.
REPLACE_TOURNAMENT = """UPDATE tournaments
    SET name = ?, rules = ?, format = ?, finished = ?, events = ?, head = ?, digest = ?,
        record = ?, archived = ?, summary = ?
    WHERE tournament_id = ? AND events = ? AND head = ?"""
TOURNAMENT_COLUMNS = "tournament_id, name, rules, format, finished, events, head, summary, archived"
SELECT_TOURNAMENT = f"SELECT {TOURNAMENT_COLUMNS} FROM tournaments WHERE tournament_id = ?"
SELECT_TOURNAMENT_BLOB = "SELECT record, digest FROM tournaments WHERE tournament_id = ?"
LIST_TOURNAMENTS = (
    f"SELECT {TOURNAMENT_COLUMNS} FROM tournaments "
    "ORDER BY finished DESC, tournament_id DESC LIMIT ? OFFSET ?"
)
COUNT_TOURNAMENTS = "SELECT COUNT(*) FROM tournaments"


class SchemaTooNew(ArchiveError):
    """The database was migrated by a newer program than this one."""


def pending(current: int) -> tuple[Migration, ...]:
    """The steps a database at ``current`` lacks, in order; :class:`SchemaTooNew` if it is
    ahead of this program."""
    if current > LATEST:
        raise SchemaTooNew(
            f"the archive's schema is at version {current}; this program knows up to {LATEST} "
            "(run the newer program, or restore a backup of the older schema)"
        )
    return tuple(m for m in MIGRATIONS if m.version > current)


def players_sql(count: int) -> str:
    """The players of ``count`` games (their ids as parameters)."""
    marks = ", ".join("?" * count)
    return (
        f"SELECT game_id, seat, name, won FROM game_players WHERE game_id IN ({marks}) "
        "ORDER BY game_id, seat"
    )


def listing_sql(query: Query, limit: int) -> tuple[str, list[object]]:
    """The statement and parameters of one page of a listing."""
    where: list[str] = []
    params: list[object] = []
    if query.since is not None:
        where.append("g.finished >= ?")
        params.append(query.since)
    if query.until is not None:
        where.append("g.finished < ?")
        params.append(query.until)
    if query.rules is not None:
        where.append("g.rules = ?")
        params.append(query.rules)
    if query.player is not None:
        where.append(
            "EXISTS (SELECT 1 FROM game_players p WHERE p.game_id = g.game_id AND p.name = ?)"
        )
        params.append(query.player)
    if query.winner is not None:
        where.append(
            "EXISTS (SELECT 1 FROM game_players p WHERE p.game_id = g.game_id AND p.name = ? "
            "AND p.won = 1)"
        )
        params.append(query.winner)
    if query.after is not None:
        where.append("(g.finished < ? OR (g.finished = ? AND g.game_id < ?))")
        finished, game_id = query.after
        params += [finished, finished, game_id]
    text = f"SELECT {ENTRY_COLUMNS} FROM games g"
    if where:
        text += " WHERE " + " AND ".join(where)
    text += " ORDER BY g.finished DESC, g.game_id DESC LIMIT ? OFFSET ?"
    params += [limit, query.offset]
    return text, params


def assemble(rows: Iterable[Sequence[Any]], players: Iterable[Sequence[Any]]) -> list[Entry]:
    """Entries from rows of ``ENTRY_COLUMNS`` and the rows of their players."""
    seated: dict[str, list[tuple[int, str, bool]]] = {}
    for game_id, seat, name, won in players:
        seated.setdefault(str(game_id), []).append((int(seat), str(name), bool(won)))
    out = []
    for game_id, rules, finished, events, head, archived in rows:
        seats = sorted(seated.get(str(game_id), []))
        out.append(
            Entry(
                game_id=str(game_id),
                rules=str(rules),
                players=tuple(name for _, name, _ in seats),
                winners=tuple(name for _, name, won in seats if won),
                finished=float(finished),
                events=int(events),
                head=str(head),
                archived=float(archived),
            )
        )
    return out


def game_params(entry: Entry, blob: bytes, digest: str) -> tuple[Any, ...]:
    """The parameters of ``INSERT_GAME``: ``entry``'s row."""
    return (
        entry.game_id,
        entry.rules,
        entry.finished,
        entry.events,
        entry.head,
        digest,
        blob,
        entry.archived,
    )


def replace_params(old: Entry, entry: Entry, blob: bytes, digest: str) -> tuple[Any, ...]:
    """The parameters of ``REPLACE_GAME``: ``entry``'s row in place of ``old``'s (its columns
    as ``INSERT_GAME`` has them, the id last)."""
    game_id, *columns = game_params(entry, blob, digest)
    return (*columns, game_id, old.events, old.head)


def player_rows(entry: Entry) -> list[tuple[str, int, str, int]]:
    """The ``game_players`` rows of an entry."""
    won = set(entry.winners)
    return [
        (entry.game_id, seat, name, int(name in won)) for seat, name in enumerate(entry.players)
    ]


def tournament_params(entry: TournamentEntry, blob: bytes, digest: str) -> tuple[Any, ...]:
    """The parameters of ``INSERT_TOURNAMENT``: ``entry``'s row."""
    return (
        entry.tournament_id,
        entry.name,
        entry.rules,
        entry.format,
        entry.finished,
        entry.events,
        entry.head,
        digest,
        blob,
        entry.archived,
        json.dumps(entry.summary, sort_keys=True),
    )


def tournament_replace_params(
    old: TournamentEntry, entry: TournamentEntry, blob: bytes, digest: str
) -> tuple[Any, ...]:
    """The parameters of ``REPLACE_TOURNAMENT``: ``entry``'s row in place of ``old``'s."""
    tournament_id, *columns = tournament_params(entry, blob, digest)
    return (*columns, tournament_id, old.events, old.head)


def tournament_entries(rows: Iterable[Sequence[Any]]) -> list[TournamentEntry]:
    """Entries from rows of ``TOURNAMENT_COLUMNS``."""
    return [
        TournamentEntry(
            tournament_id=str(tournament_id),
            name=str(name),
            rules=str(rules),
            format=str(form),
            finished=float(finished),
            events=int(events),
            head=str(head),
            summary=json.loads(summary),
            archived=float(archived),
        )
        for tournament_id, name, rules, form, finished, events, head, summary, archived in rows
    ]
