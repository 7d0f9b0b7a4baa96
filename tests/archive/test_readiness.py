"""The archiver's readiness as last known (services/archiver/reach.py): an idle archiver whose
archive goes away is not ready once its next check finds it (one check every ``CHECK_SECONDS``,
none per pass), and ready again once the archive answers; a pass stuck on the archive is not
ready once the archive has been silent too long; Redis's side the same, from its heartbeat.
The archive fails on demand (a wrapper over each backend; a PostgreSQL of the test's own that
crashes); the archive's clock is stepped, never the machine timed."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from services.archiver import reach
from services.archiver.archiver import Archiver
from services.archiver.reach import CHECK_SECONDS, SILENT_SECONDS, ArchiveReach
from shared.archive.base import Archive, ArchiveError, Entry, Query
from shared.archive.postgres import PostgresArchive
from shared.archive.sqlite import SqliteArchive
from shared.archive.tournaments import TournamentEntry
from shared.audit.record import GameRecord
from shared.audit.source import import_record
from shared.infra.keys import Keys
from shared.infra.settings import Settings
from shared.infra.store.redis import RedisEventStore
from tests.archive.pgserver import PostgresServer
from tests.servers import until
from tests.services.conftest import delete_prefixed, redis_client

SAFETY = 30.0  # seconds: a wait's safety net only (a hang fails; a slow machine waits longer)


class Stepped:
    """A monotonic clock that moves only when the test moves it."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Switchable(Archive):
    """An archive that fails on demand: ``away``, every call is refused as by a database that
    is down; ``stall``, every call waits until ``resume``. ``checks`` counts the schema-version
    questions (the archiver's checks), ``waiting`` the calls held now."""

    def __init__(self, inner: Archive) -> None:
        self.inner = inner
        self.name = inner.name
        self.away = False
        self.flowing = asyncio.Event()
        self.flowing.set()
        self.checks = 0
        self.waiting = 0

    def stall(self) -> None:
        self.flowing.clear()

    def resume(self) -> None:
        self.flowing.set()

    async def _gate(self) -> None:
        self.waiting += 1
        try:
            await self.flowing.wait()
        finally:
            self.waiting -= 1
        if self.away:
            raise ArchiveError(f"{self.name}: connection refused")

    async def open(self) -> None:
        await self._gate()
        await self.inner.open()

    async def close(self) -> None:
        await self.inner.close()

    async def schema_version(self) -> int:
        self.checks += 1
        await self._gate()
        return await self.inner.schema_version()

    async def count(self) -> int:
        await self._gate()
        return await self.inner.count()

    async def _insert(self, entry: Entry, blob: bytes, digest: str) -> bool:
        await self._gate()
        return await self.inner._insert(entry, blob, digest)

    async def _insert_and_read(self, entry: Entry, blob: bytes, digest: str) -> Entry | None:
        await self._gate()
        return await self.inner._insert_and_read(entry, blob, digest)

    async def _replace(self, old: Entry, entry: Entry, blob: bytes, digest: str) -> bool:
        await self._gate()
        return await self.inner._replace(old, entry, blob, digest)

    async def _replace_and_read(
        self, old: Entry, entry: Entry, blob: bytes, digest: str
    ) -> Entry | None:
        await self._gate()
        return await self.inner._replace_and_read(old, entry, blob, digest)

    async def _entry(self, game_id: str) -> Entry | None:
        await self._gate()
        return await self.inner._entry(game_id)

    async def _blob(self, game_id: str) -> tuple[bytes, str] | None:
        await self._gate()
        return await self.inner._blob(game_id)

    async def _list(self, query: Query, limit: int) -> list[Entry]:
        await self._gate()
        return await self.inner._list(query, limit)

    async def count_tournaments(self) -> int:
        await self._gate()
        return await self.inner.count_tournaments()

    async def _insert_tournament(self, entry: TournamentEntry, blob: bytes, digest: str) -> bool:
        await self._gate()
        return await self.inner._insert_tournament(entry, blob, digest)

    async def _replace_tournament(
        self, old: TournamentEntry, entry: TournamentEntry, blob: bytes, digest: str
    ) -> bool:
        await self._gate()
        return await self.inner._replace_tournament(old, entry, blob, digest)

    async def _tournament_entry(self, tournament_id: str) -> TournamentEntry | None:
        await self._gate()
        return await self.inner._tournament_entry(tournament_id)

    async def _tournament_blob(self, tournament_id: str) -> tuple[bytes, str] | None:
        await self._gate()
        return await self.inner._tournament_blob(tournament_id)

    async def _list_tournaments(self, limit: int, offset: int) -> list[TournamentEntry]:
        await self._gate()
        return await self.inner._list_tournaments(limit, offset)


@dataclass
class Running:
    """An archiver running idle on the test's Redis, its archive's clock stepped."""

    archiver: Archiver
    clock: Stepped
    passes: list[int]

    async def ready(self) -> tuple[bool, str]:
        async with asyncio.timeout(SAFETY):  # never a call of its own: answers at once
            return await self.archiver.ready()

    async def becomes(self, ready: bool) -> tuple[bool, str]:
        """Until the archiver's readiness is ``ready``; its answer then."""

        async def reached() -> tuple[bool, str] | None:
            answer = await self.ready()
            return answer if answer[0] is ready else None

        found: tuple[bool, str] = await until(reached, SAFETY, every=0.01)
        return found

    async def passes_go_by(self, count: int) -> None:
        """Until ``count`` more passes have run."""
        start = self.passes[0]
        await until(lambda: self.passes[0] >= start + count, SAFETY, every=0.01)

    async def checked(self) -> tuple[bool, str]:
        """Step to the next check, wait until it has run; the readiness after it."""
        self.clock.now += CHECK_SECONDS
        state = self.archiver.reach
        await until(lambda: state.asked_at == self.clock.now, SAFETY, every=0.01)
        return await self.ready()


@asynccontextmanager
async def running(archive: Archive) -> AsyncIterator[Running]:
    """The archiver on ``archive``, running and ready; stopped after."""
    client = redis_client()
    keys = Keys(f"wt{uuid.uuid4().hex[:10]}:")
    clock = Stepped()
    archiver = Archiver(
        client, Settings(prefix=keys.prefix, partitions=2), archive, reach=ArchiveReach(clock)
    )
    archiver.pass_seconds = 0.01
    passes = [0]
    one_pass = archiver.one_pass

    async def counted() -> dict[str, int]:
        passes[0] += 1
        return await one_pass()

    archiver.one_pass = counted
    task = asyncio.create_task(archiver.run())
    try:
        here = Running(archiver, clock, passes)
        assert await here.becomes(True) == (True, "archiving")
        yield here
    finally:
        archiver.stop()
        if isinstance(archive, Switchable):
            archive.away = False
            archive.resume()
        await asyncio.wait_for(task, SAFETY)
        await delete_prefixed(client, keys.prefix)
        await client.aclose()


@pytest.fixture
async def switchable(archive: Archive) -> Switchable:
    return Switchable(archive)


@pytest.fixture
async def idle(switchable: Switchable) -> AsyncIterator[Running]:
    async with running(switchable) as here:
        yield here


async def test_an_idle_archiver_is_not_ready_while_its_archive_is_away_and_ready_after(
    idle: Running, switchable: Switchable
) -> None:
    switchable.away = True
    await idle.passes_go_by(5)
    # Nothing asked the archive yet: the last known state stands, and no pass checks it.
    assert await idle.ready() == (True, "archiving")
    assert switchable.checks == 0
    idle.clock.now += CHECK_SECONDS
    assert await idle.becomes(False) == (
        False,
        f"archive: {switchable.name}: connection refused",
    )
    assert switchable.checks == 1
    await idle.passes_go_by(5)
    assert switchable.checks == 1  # one check every CHECK_SECONDS, not one per pass
    switchable.away = False
    await idle.passes_go_by(5)
    assert (await idle.ready())[0] is False  # not before the next check finds it back
    idle.clock.now += CHECK_SECONDS
    assert await idle.becomes(True) == (True, "archiving")
    assert switchable.checks == 2


async def test_a_check_the_archive_does_not_answer_fails(
    idle: Running, switchable: Switchable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reach, "CHECK_TIMEOUT", 0.05)
    switchable.stall()
    idle.clock.now += CHECK_SECONDS
    assert await idle.becomes(False) == (False, "archive: no answer within 0.05 s")
    switchable.resume()
    idle.clock.now += CHECK_SECONDS
    assert await idle.becomes(True) == (True, "archiving")


async def test_a_pass_stuck_on_the_archive_is_not_ready_once_it_has_been_silent(
    idle: Running, switchable: Switchable, records: list[GameRecord]
) -> None:
    archiver, record = idle.archiver, records[0]
    await import_record(RedisEventStore(archiver.client, archiver.keys.prefix), record)
    switchable.stall()
    await archiver.mover.retention.note_due([record.game_id], time.time())
    archiver.wake.set()
    await until(lambda: switchable.waiting > 0, SAFETY, every=0.01)  # the pass waits on it
    idle.clock.now += SILENT_SECONDS - 1
    assert await idle.ready() == (True, "archiving")
    idle.clock.now += 2
    assert await idle.ready() == (
        False,
        f"no answer from the archive for {SILENT_SECONDS + 1:.1f} s",
    )
    assert switchable.checks == 0  # the loop is held by the pass: nothing checked meanwhile
    switchable.resume()  # the row is written: the archive answered
    assert await idle.becomes(True) == (True, "archiving")
    assert await switchable.inner.entry(record.game_id) is not None


async def test_the_redis_side_is_not_ready_while_the_heartbeat_fails_and_ready_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running(SqliteArchive(tmp_path / "archive.db")) as idle:
        members = idle.archiver.members
        beat = members.beat
        down = [True]

        async def failing() -> Any:
            if down[0]:
                raise ConnectionError("Connection refused")
            return await beat()

        monkeypatch.setattr(members, "beat", failing)
        assert await idle.becomes(False) == (False, "redis: Connection refused")
        down[0] = False
        assert await idle.becomes(True) == (True, "archiving")


@pytest.mark.slow  # a PostgreSQL of its own: initdb, start, kill, start
async def test_an_idle_archiver_notices_its_postgresql_crash_and_recovery() -> None:
    with PostgresServer() as server:
        async with running(PostgresArchive(server.url)) as idle:
            assert await idle.checked() == (True, "archiving")
            await asyncio.to_thread(server.crash)  # no clean shutdown: as a killed server
            ready, why = await idle.checked()
            assert not ready and why.startswith("archive: ")
            await asyncio.to_thread(server.start)

            async def answered() -> tuple[bool, str] | None:
                answer = await idle.checked()  # the pool may take a few checks to reconnect
                return answer if answer[0] else None

            assert await until(answered, SAFETY, every=0) == (True, "archiving")
