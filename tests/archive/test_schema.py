"""The archive's schema on both backends: migrations in order, refusal of a newer schema, and a
damaged row refused on read rather than handed out."""

from __future__ import annotations

import sqlite3

import psycopg
import pytest

from shared.archive import schema
from shared.archive.base import Archive, ArchiveError
from shared.archive.postgres import PostgresArchive
from shared.archive.sqlite import SqliteArchive
from shared.audit.record import GameRecord


def execute(archive: Archive, text: str, params: tuple[object, ...] = ()) -> None:
    """Run SQL on the archive's database behind its back (as an operator, or damage, would)."""
    if isinstance(archive, SqliteArchive):
        with sqlite3.connect(archive.path) as db:
            db.execute(text, params)
        return
    assert isinstance(archive, PostgresArchive)
    with psycopg.connect(archive.url, autocommit=True) as db:
        db.execute(text.replace("?", "%s"), params)


async def test_a_database_of_an_older_schema_is_migrated_step_by_step(archive: Archive) -> None:
    await archive.close()
    execute(archive, "DROP INDEX games_by_finished")
    execute(archive, "DROP INDEX games_by_rules")
    execute(archive, "DROP INDEX players_by_name")
    execute(archive, "DROP TABLE tournaments")
    execute(archive, "DELETE FROM schema_version WHERE version >= 2")
    await archive.open()
    assert await archive.schema_version() == schema.LATEST == 3
    # The index of step 2 and the table of step 3 are back: making them again fails.
    with pytest.raises((sqlite3.OperationalError, psycopg.errors.DuplicateTable)):
        execute(archive, "CREATE INDEX games_by_rules ON games (rules)")
    with pytest.raises((sqlite3.OperationalError, psycopg.errors.DuplicateTable)):
        execute(archive, "CREATE TABLE tournaments (tournament_id TEXT)")
    assert await archive.count_tournaments() == 0


async def test_a_schema_newer_than_this_program_is_refused(archive: Archive) -> None:
    await archive.close()
    execute(archive, schema.NOTE_VERSION, (schema.LATEST + 1, "from the future", 0.0))
    with pytest.raises(schema.SchemaTooNew, match=f"version {schema.LATEST + 1}"):
        await archive.open()


async def test_a_damaged_record_is_refused_on_read(
    archive: Archive, records: list[GameRecord]
) -> None:
    record = records[0]
    await archive.store(record, archived=1.0)
    execute(archive, "UPDATE games SET digest = ? WHERE game_id = ?", ("0" * 64, record.game_id))
    with pytest.raises(ArchiveError, match="not the one stored"):
        await archive.fetch(record.game_id)


def test_pending_steps_come_in_order() -> None:
    assert [m.version for m in schema.MIGRATIONS] == list(range(1, schema.LATEST + 1))
    assert [m.version for m in schema.pending(0)] == [1, 2, 3]
    assert [m.version for m in schema.pending(1)] == [2, 3]
    assert schema.pending(schema.LATEST) == ()
