"""The embedded archive: one SQLite file (the standard library), for ``rummy serve`` and
``make run`` with no database configured, so finished games outlive a restart without
installing anything.

sqlite3 blocks, so every call runs in a worker thread, one at a time over one connection (the
lock). The file is in WAL mode: other processes (``rummy archive list``) read it while the
service writes, and a writer waits up to ``BUSY_MS`` for another's transaction.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from shared.archive import schema
from shared.archive.base import Archive, ArchiveError, Entry, Query
from shared.archive.tournaments import TournamentEntry

T = TypeVar("T")
BUSY_MS = 5000


class SqliteArchive(Archive):
    """The archive in the SQLite file at ``path`` (``:memory:`` for a private one)."""

    name = "sqlite"

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        def call() -> T:
            with self._lock:
                if self._db is None:
                    raise ArchiveError("the archive is not open")
                try:
                    return work(self._db)
                except sqlite3.Error as err:
                    raise ArchiveError(f"sqlite {self.path}: {err}") from err

        return await asyncio.to_thread(call)

    async def open(self) -> None:
        if self._db is not None:
            return
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as err:
            raise ArchiveError(f"sqlite {self.path}: {err}") from err
        db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        db.execute("PRAGMA foreign_keys = ON")
        if self.path != ":memory:":
            db.execute("PRAGMA journal_mode = WAL")
        self._db = db
        try:
            await self._run(_migrate)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        with self._lock:
            db, self._db = self._db, None
        if db is not None:
            db.close()

    async def schema_version(self) -> int:
        return await self._run(lambda db: int(db.execute(schema.CURRENT_VERSION).fetchone()[0]))

    async def count(self) -> int:
        return await self._run(lambda db: int(db.execute(schema.COUNT).fetchone()[0]))

    async def _insert(self, entry: Entry, blob: bytes, digest: str) -> bool:
        def work(db: sqlite3.Connection) -> bool:
            cursor = db.execute(schema.INSERT_GAME, schema.game_params(entry, blob, digest))
            inserted = cursor.rowcount == 1
            if inserted:
                _seat(db, entry)
            return inserted

        return await self._run(_transaction(work))

    async def _replace(self, old: Entry, entry: Entry, blob: bytes, digest: str) -> bool:
        def work(db: sqlite3.Connection) -> bool:
            cursor = db.execute(
                schema.REPLACE_GAME, schema.replace_params(old, entry, blob, digest)
            )
            replaced = cursor.rowcount == 1
            if replaced:
                db.execute(schema.DELETE_PLAYERS, (entry.game_id,))
                _seat(db, entry)
            return replaced

        return await self._run(_transaction(work))

    async def _entry(self, game_id: str) -> Entry | None:
        def work(db: sqlite3.Connection) -> Entry | None:
            rows = db.execute(schema.SELECT_ENTRY, (game_id,)).fetchall()
            found = schema.assemble(rows, _players(db, [game_id]) if rows else [])
            return found[0] if found else None

        return await self._run(work)

    async def _blob(self, game_id: str) -> tuple[bytes, str] | None:
        def work(db: sqlite3.Connection) -> tuple[bytes, str] | None:
            row = db.execute(schema.SELECT_BLOB, (game_id,)).fetchone()
            return None if row is None else (bytes(row[0]), str(row[1]))

        return await self._run(work)

    async def _list(self, query: Query, limit: int) -> list[Entry]:
        text, params = schema.listing_sql(query, limit)

        def work(db: sqlite3.Connection) -> list[Entry]:
            rows = db.execute(text, params).fetchall()
            ids = [str(row[0]) for row in rows]
            return schema.assemble(rows, _players(db, ids) if ids else [])

        return await self._run(work)

    async def count_tournaments(self) -> int:
        return await self._run(lambda db: int(db.execute(schema.COUNT_TOURNAMENTS).fetchone()[0]))

    async def _insert_tournament(self, entry: TournamentEntry, blob: bytes, digest: str) -> bool:
        params = schema.tournament_params(entry, blob, digest)
        return await self._run(
            lambda db: db.execute(schema.INSERT_TOURNAMENT, params).rowcount == 1
        )

    async def _replace_tournament(
        self, old: TournamentEntry, entry: TournamentEntry, blob: bytes, digest: str
    ) -> bool:
        params = schema.tournament_replace_params(old, entry, blob, digest)
        return await self._run(
            lambda db: db.execute(schema.REPLACE_TOURNAMENT, params).rowcount == 1
        )

    async def _tournament_entry(self, tournament_id: str) -> TournamentEntry | None:
        found = await self._run(
            lambda db: db.execute(schema.SELECT_TOURNAMENT, (tournament_id,)).fetchall()
        )
        entries = schema.tournament_entries(found)
        return entries[0] if entries else None

    async def _tournament_blob(self, tournament_id: str) -> tuple[bytes, str] | None:
        row = await self._run(
            lambda db: db.execute(schema.SELECT_TOURNAMENT_BLOB, (tournament_id,)).fetchone()
        )
        return None if row is None else (bytes(row[0]), str(row[1]))

    async def _list_tournaments(self, limit: int, offset: int) -> list[TournamentEntry]:
        found = await self._run(
            lambda db: db.execute(schema.LIST_TOURNAMENTS, (limit, offset)).fetchall()
        )
        return schema.tournament_entries(found)


def _transaction(work: Callable[[sqlite3.Connection], T]) -> Callable[[sqlite3.Connection], T]:
    """``work`` in a write transaction of its own (``BEGIN IMMEDIATE``), undone if it fails."""

    def transaction(db: sqlite3.Connection) -> T:
        db.execute("BEGIN IMMEDIATE")
        try:
            done = work(db)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return done

    return transaction


def _seat(db: sqlite3.Connection, entry: Entry) -> None:
    """The ``game_players`` rows of ``entry``, in one statement."""
    players = schema.player_rows(entry)
    if players:
        flat = [value for player in players for value in player]
        db.execute(schema.insert_players_sql(len(players)), flat)


def _players(db: sqlite3.Connection, ids: list[str]) -> list[Any]:
    return db.execute(schema.players_sql(len(ids)), ids).fetchall()


def _migrate(db: sqlite3.Connection) -> int:
    """Apply the missing steps, each in a transaction of its own (``BEGIN IMMEDIATE``: two
    processes opening one file migrate one after the other); the version reached."""
    db.execute(schema.CREATE_VERSIONS)
    while True:
        db.execute("BEGIN IMMEDIATE")
        try:
            current = int(db.execute(schema.CURRENT_VERSION).fetchone()[0])
            steps = schema.pending(current)
            if not steps:
                db.execute("COMMIT")
                return current
            step = steps[0]
            for statement in step.statements:
                db.execute(statement.replace("{blob}", "BLOB"))
            db.execute(schema.NOTE_VERSION, (step.version, step.name, time.time()))
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
