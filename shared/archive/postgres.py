"""The archive on PostgreSQL (psycopg 3, async, over its connection pool): the database
operators already run, back up and restore (``docs/archive.md``).

The pool checks a connection before handing it out, so one the server dropped (a restart, a
failover, an idle timeout) is replaced rather than failing the next call; a call that meets the
database gone raises :class:`ArchiveError` and the caller retries later (the archiver does: a
game leaves Redis only once its row is read back). Migrations take a transaction-level
advisory lock, so archivers starting together migrate one at a time.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from shared.archive import schema
from shared.archive.base import Archive, ArchiveError, Entry, Query
from shared.archive.tournaments import TournamentEntry

MIGRATION_LOCK = 0x52554D4D  # "RUMM": the advisory lock the migrations hold
POOL_SIZE = 4
CONNECT_SECONDS = 10.0


def _pg(text: str) -> str:
    """SQLite's placeholders as psycopg's (the shared SQL holds no other ``?`` or ``%``)."""
    return text.replace("?", "%s")


class PostgresArchive(Archive):
    """The archive in the PostgreSQL database at ``url`` (``postgresql://...``)."""

    name = "postgresql"

    def __init__(self, url: str, pool_size: int = POOL_SIZE) -> None:
        self.url = url
        self.pool_size = pool_size
        self._pool: AsyncConnectionPool | None = None

    def _open_pool(self) -> AsyncConnectionPool:
        if self._pool is None:
            raise ArchiveError("the archive is not open")
        return self._pool

    async def open(self) -> None:
        if self._pool is not None:
            return
        pool = AsyncConnectionPool(
            self.url,
            min_size=1,
            max_size=self.pool_size,
            open=False,
            timeout=CONNECT_SECONDS,
            check=AsyncConnectionPool.check_connection,
            name="archive",
        )
        try:
            await pool.open(wait=True, timeout=CONNECT_SECONDS)
            self._pool = pool
            await self._migrate()
        except BaseException as err:
            self._pool = None
            await pool.close()
            if isinstance(err, psycopg.Error | TimeoutError) or "PoolTimeout" in type(err).__name__:
                raise ArchiveError(f"postgresql: cannot open the archive: {err}") from err
            raise

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def _migrate(self) -> None:
        pool = self._open_pool()
        async with pool.connection() as conn:
            await conn.execute(schema.CREATE_VERSIONS)
        while True:
            async with pool.connection() as conn, conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                row = await (await conn.execute(schema.CURRENT_VERSION)).fetchone()
                steps = schema.pending(int(row[0]) if row else 0)
                if not steps:
                    return
                step = steps[0]
                for statement in step.statements:
                    await conn.execute(statement.replace("{blob}", "BYTEA"))
                await conn.execute(_pg(schema.NOTE_VERSION), (step.version, step.name, time.time()))

    async def _one(self, text: str, params: tuple[Any, ...] = ()) -> Any:
        try:
            async with self._open_pool().connection() as conn:
                return await (await conn.execute(_pg(text), params)).fetchone()
        except psycopg.Error as err:
            raise ArchiveError(f"postgresql: {err}") from err

    async def schema_version(self) -> int:
        row = await self._one(schema.CURRENT_VERSION)
        return int(row[0])

    async def count(self) -> int:
        row = await self._one(schema.COUNT)
        return int(row[0])

    async def _insert(self, entry: Entry, blob: bytes, digest: str) -> bool:
        try:
            async with self._open_pool().connection() as conn:
                return await _insert_on(conn, entry, blob, digest)
        except psycopg.Error as err:
            raise ArchiveError(f"postgresql: {err}") from err

    async def _insert_and_read(self, entry: Entry, blob: bytes, digest: str) -> Entry | None:
        """Both over one connection: the row committed, then read back (a fresh statement
        after the commit, so it reads what the database holds)."""
        try:
            async with self._open_pool().connection() as conn:
                await _insert_on(conn, entry, blob, digest)
                found = await _entries_on(conn, schema.SELECT_ENTRY, [entry.game_id])
        except psycopg.Error as err:
            raise ArchiveError(f"postgresql: {err}") from err
        return found[0] if found else None

    async def _replace(self, old: Entry, entry: Entry, blob: bytes, digest: str) -> bool:
        try:
            async with self._open_pool().connection() as conn:
                return await _replace_on(conn, old, entry, blob, digest)
        except psycopg.Error as err:
            raise ArchiveError(f"postgresql: {err}") from err

    async def _replace_and_read(
        self, old: Entry, entry: Entry, blob: bytes, digest: str
    ) -> Entry | None:
        """Both over one connection, as ``_insert_and_read``."""
        try:
            async with self._open_pool().connection() as conn:
                await _replace_on(conn, old, entry, blob, digest)
                found = await _entries_on(conn, schema.SELECT_ENTRY, [entry.game_id])
        except psycopg.Error as err:
            raise ArchiveError(f"postgresql: {err}") from err
        return found[0] if found else None

    async def _entry(self, game_id: str) -> Entry | None:
        found = await self._entries(schema.SELECT_ENTRY, [game_id])
        return found[0] if found else None

    async def _blob(self, game_id: str) -> tuple[bytes, str] | None:
        row = await self._one(schema.SELECT_BLOB, (game_id,))
        return None if row is None else (bytes(row[0]), str(row[1]))

    async def _list(self, query: Query, limit: int) -> list[Entry]:
        text, params = schema.listing_sql(query, limit)
        return await self._entries(text, params)

    async def _entries(self, text: str, params: list[Any]) -> list[Entry]:
        try:
            async with self._open_pool().connection() as conn:
                return await _entries_on(conn, text, params)
        except psycopg.Error as err:
            raise ArchiveError(f"postgresql: {err}") from err

    async def _change(self, text: str, params: tuple[Any, ...]) -> int:
        """One statement that changes rows, committed; how many it changed."""
        try:
            async with self._open_pool().connection() as conn:
                return (await conn.execute(_pg(text), params)).rowcount
        except psycopg.Error as err:
            raise ArchiveError(f"postgresql: {err}") from err

    async def _rows(self, text: str, params: tuple[Any, ...]) -> list[Any]:
        try:
            async with self._open_pool().connection() as conn:
                return await (await conn.execute(_pg(text), params)).fetchall()
        except psycopg.Error as err:
            raise ArchiveError(f"postgresql: {err}") from err

    async def count_tournaments(self) -> int:
        row = await self._one(schema.COUNT_TOURNAMENTS)
        return int(row[0])

    async def _insert_tournament(self, entry: TournamentEntry, blob: bytes, digest: str) -> bool:
        params = schema.tournament_params(entry, blob, digest)
        return await self._change(schema.INSERT_TOURNAMENT, params) == 1

    async def _replace_tournament(
        self, old: TournamentEntry, entry: TournamentEntry, blob: bytes, digest: str
    ) -> bool:
        params = schema.tournament_replace_params(old, entry, blob, digest)
        return await self._change(schema.REPLACE_TOURNAMENT, params) == 1

    async def _tournament_entry(self, tournament_id: str) -> TournamentEntry | None:
        entries = schema.tournament_entries(
            await self._rows(schema.SELECT_TOURNAMENT, (tournament_id,))
        )
        return entries[0] if entries else None

    async def _tournament_blob(self, tournament_id: str) -> tuple[bytes, str] | None:
        row = await self._one(schema.SELECT_TOURNAMENT_BLOB, (tournament_id,))
        return None if row is None else (bytes(row[0]), str(row[1]))

    async def _list_tournaments(self, limit: int, offset: int) -> list[TournamentEntry]:
        return schema.tournament_entries(await self._rows(schema.LIST_TOURNAMENTS, (limit, offset)))


async def _insert_on(
    conn: psycopg.AsyncConnection[Any], entry: Entry, blob: bytes, digest: str
) -> bool:
    """In one transaction on ``conn``: the game's row and its players' unless it is there."""
    async with conn.transaction():
        params = schema.game_params(entry, blob, digest)
        cursor = await conn.execute(_pg(schema.INSERT_GAME), params)
        inserted = cursor.rowcount == 1
        if inserted:
            await _seat_on(conn, entry)
    return inserted


async def _replace_on(
    conn: psycopg.AsyncConnection[Any], old: Entry, entry: Entry, blob: bytes, digest: str
) -> bool:
    """In one transaction on ``conn``: the game's row and its players' replaced by
    ``entry``'s, if the row is still ``old``."""
    async with conn.transaction():
        params = schema.replace_params(old, entry, blob, digest)
        cursor = await conn.execute(_pg(schema.REPLACE_GAME), params)
        replaced = cursor.rowcount == 1
        if replaced:
            await conn.execute(_pg(schema.DELETE_PLAYERS), (entry.game_id,))
            await _seat_on(conn, entry)
    return replaced


async def _seat_on(conn: psycopg.AsyncConnection[Any], entry: Entry) -> None:
    """The ``game_players`` rows of ``entry``, in one statement."""
    players = schema.player_rows(entry)
    if players:
        flat = [value for player in players for value in player]
        await conn.execute(_pg(schema.insert_players_sql(len(players))), flat)


async def _entries_on(
    conn: psycopg.AsyncConnection[Any], text: str, params: list[Any]
) -> list[Entry]:
    rows = await (await conn.execute(_pg(text), params)).fetchall()
    ids = [str(row[0]) for row in rows]
    players: list[Any] = []
    if ids:
        cursor = await conn.execute(_pg(schema.players_sql(len(ids))), ids)
        players = await cursor.fetchall()
    return schema.assemble(rows, players)
