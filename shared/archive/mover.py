"""Moving finished games from Redis to the archive: archive each (its record built and audited
with ``shared.audit``, stored, read back), then, once its retention is up, let Redis forget it.

The steps and why a crash at any point loses nothing are ``shared/infra/retention.py``'s; this
is the work of one pass, shared by the archiver service (``services/archiver``) and
``rummy archive now``. Every step may be repeated: several archivers, or a rerun after a kill,
only redo what is not done.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import structlog

from shared.archive.base import Archive, ArchiveConflict, ArchiveError, prepare
from shared.archive.sealed import Headed, Row
from shared.audit.record import GameRecord, RecordError, build_record, ended
from shared.audit.source import SourceError, load_game
from shared.audit.verdicts import Audit
from shared.audit.verify import audit_record
from shared.infra import codec
from shared.infra.client import RedisClient
from shared.infra.keys import Keys
from shared.infra.retention import Holding, Retention
from shared.infra.store.redis import EVENT_FIELD, RedisEventStore

RETRY_SECONDS = 300.0  # a game that could not be archived is tried again this much later
BATCH = 100  # games taken from a set per pass

ARCHIVED = "archived"  # stored (or its longer log stored over the archived one) and read back
ALREADY = "already"  # it was in the archive with the same head (a rerun)
GONE = "gone"  # not in Redis (forgotten already, or never a game): nothing to do
LIVE = "live"  # not finished: it is not archived (news of something else)
REFUSED = "refused"  # could not be archived (its audit failed, a conflict, a damaged log)
FAILED = "failed"  # the archive or Redis failed: tried again later


class Moving(ABC):
    """The passes every kind of finished log goes through (games, tournaments): archive the
    due ones, a batch at a time, and forget the kept ones whose retention is up. What archiving
    one is, and what forgetting it removes, are the kind's own."""

    noun = "game"  # what the logs name one (``game=g1``)

    def __init__(
        self,
        archive: Archive,
        retention: Holding,
        retain_seconds: float,
        clock: Callable[[], float],
        log: Any,
        on_write: Callable[[float], None] | None,
    ) -> None:
        self.archive = archive
        self.retention = retention
        self.retain_seconds = retain_seconds
        self.clock = clock
        self.log = log
        self.on_write = on_write

    @abstractmethod
    async def archive_one(self, item: str) -> str:
        """Archive one due item; its outcome (``ARCHIVED``, ``ALREADY``, ``GONE``, ``LIVE``,
        ``REFUSED``)."""

    @abstractmethod
    async def archived(self, item: str) -> Headed | None:
        """The item's archive entry (its version and head), or None if it is not archived."""

    @abstractmethod
    def _row(self, record: Any, now: float) -> Row[Any]:
        """The row of the item's audited record (CPU only: run off the event loop)."""

    @abstractmethod
    async def _write(self, row: Row[Any]) -> Any:
        """Store the row, and its entry as read back (``Archive.write`` and its kin)."""

    async def _store(self, item: str, record: Any, now: float) -> str:
        """Store the item's audited record and keep it; ``ARCHIVED`` (or a longer log over the
        archived one), ``ALREADY`` (the same head there already: a rerun) or ``REFUSED`` (the
        archive holds another history)."""
        before = await self.archived(item)
        try:
            row = await asyncio.to_thread(self._row, record, now)
            started = time.perf_counter()
            entry = await self._write(row)
        except ArchiveConflict as err:
            return await self._refuse(item, str(err), now)
        if self.on_write is not None:
            self.on_write(time.perf_counter() - started)
        await self.retention.kept_since(item, entry.archived)
        if before is None or before.head != entry.head:
            return ARCHIVED
        return ALREADY

    async def _refuse(self, item: str, why: str | None, now: float) -> str:
        """``REFUSED``: the item stays whole in Redis, logged, and is tried again
        ``RETRY_SECONDS`` later."""
        self.log.error(f"{self.noun} not archived", **{self.noun: item}, why=why)
        await self.retention.retry_later(item, now + RETRY_SECONDS)
        return REFUSED

    async def archive_due(self, limit: int = BATCH) -> dict[str, int]:
        """Archive up to ``limit`` due items; how many had each outcome. One whose archive or
        Redis call failed stays due (tried again on the next pass), counted ``FAILED``."""
        counts: dict[str, int] = {}
        for item in await self.retention.due(self.clock(), limit):
            try:
                outcome = await self.archive_one(item)
            except ArchiveError as err:
                self.log.warning(
                    "archiving failed; trying again", **{self.noun: item}, error=str(err)
                )
                outcome = FAILED
            counts[outcome] = counts.get(outcome, 0) + 1
            if outcome == FAILED:
                break  # the archive is away: the rest would fail too
        return counts

    async def forget_expired(self, limit: int = BATCH) -> int:
        """Remove from Redis up to ``limit`` archived items whose retention is up, each only
        after its archive row is read back once more with the head Redis holds; how many."""
        if self.retain_seconds < 0:
            return 0
        forgotten = 0
        for item in await self.retention.expired(self.clock() - self.retain_seconds, limit):
            entry = await self.archived(item)
            if entry is None or not await self._forget(item, entry):
                continue
            forgotten += 1
        return forgotten

    async def _forget(self, item: str, entry: Headed) -> bool:
        """Forget the item unless its log moved past the archived head (a game's rematch
        offered, a tournament's ruling recorded since): then it is due again at once, and its
        longer log replaces the archived one."""
        if await self.retention.forget(item, entry.head):
            return True
        self.log.info(
            f"{self.noun} grew after it was archived; archiving it again",
            **{self.noun: item},
            archived=entry.events,
        )
        await self.retention.due_again(item, self.clock())
        return False


class Mover(Moving):
    """One deployment's finished games on their way to ``archive``."""

    retention: Retention

    def __init__(
        self,
        client: RedisClient,
        keys: Keys,
        archive: Archive,
        retain_seconds: float,
        clock: Callable[[], float] = time.time,
        *,
        audit: Callable[[GameRecord], Audit] = audit_record,
        on_write: Callable[[float], None] | None = None,
        log: Any = None,
    ) -> None:
        """``retain_seconds``: how long an archived game stays in Redis (negative: for ever);
        ``clock``: unix seconds (tests step one); ``on_write(seconds)``: each archive write's
        duration (the row committed and read back; its preparation, done in a thread, apart)."""
        super().__init__(
            archive,
            Retention(client, keys),
            retain_seconds,
            clock,
            log or structlog.get_logger("archive"),
            on_write,
        )
        self.client = client
        self.keys = keys
        self.audit = audit
        self.store = RedisEventStore(client, keys.prefix)

    async def archive_one(self, item: str) -> str:
        return await self.archive_game(item)

    async def archived(self, item: str) -> Headed | None:
        return await self.archive.entry(item)

    def _row(self, record: Any, now: float) -> Row[Any]:
        return prepare(record, now)

    async def _write(self, row: Row[Any]) -> Any:
        return await self.archive.write(row)

    async def archive_game(self, game_id: str) -> str:
        """Archive one due game; the outcome (``ARCHIVED``, ``ALREADY``, ``GONE``, ``LIVE``,
        ``REFUSED``; a game refused is tried again ``RETRY_SECONDS`` later)."""
        now = self.clock()
        try:
            game = await load_game(self.store, game_id)
        except SourceError:
            await self.client.zrem(self.keys.archive_due(), game_id)
            return GONE
        if not ended(game.events):
            await self.client.zrem(self.keys.archive_due(), game_id)
            return LIVE
        why = self._unsound(game.defects)
        record: GameRecord | None = None
        if why is None:
            try:
                record = build_record(game.events, now)
            except RecordError as err:
                why = str(err)
        if record is not None and why is None:
            audit = await asyncio.to_thread(self.audit, record)
            if not audit.ok:
                bad = audit.first_bad()
                why = f"its audit failed: {bad.check}: {bad.message}" if bad else "audit failed"
        if record is None or why is not None:
            return await self._refuse(game_id, why, now)
        return await self._store(game_id, record, now)

    @staticmethod
    def _unsound(defects: tuple[tuple[int, str], ...]) -> str | None:
        if not defects:
            return None
        version, why = defects[0]
        return f"version {version} cannot be read: {why}"

    async def sweep(self) -> int:
        """Note as due every finished game in the games index that is neither due nor kept
        (the feed is trimmed, and the archiver may have been down when a game ended); how many
        it noted."""
        noted: list[str] = []
        async for raw in self.client.sscan_iter(self.keys.games(), count=500):
            game_id = raw.decode() if isinstance(raw, bytes) else str(raw)
            if await self.retention.known(game_id) or not await self._has_ended(game_id):
                continue
            noted.append(game_id)
        await self.retention.note_due(noted, self.clock())
        return len(noted)

    async def _has_ended(self, game_id: str) -> bool:
        """Whether the game's last events hold its ``MatchEnded`` (it ends with the seed's
        reveal in the same append, and only a rematch offer may follow: one of the last
        three)."""
        tail = await self.client.xrevrange(self.keys.events(game_id), "+", "-", count=3)
        for _, fields in tail or []:
            raw = fields.get(EVENT_FIELD)
            if isinstance(raw, bytes):
                try:
                    if codec.decode_stored(raw).type == "MatchEnded":
                        return True
                except codec.CodecError:
                    return True  # a damaged tail: the archive pass reports it
        return False
