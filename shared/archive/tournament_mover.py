"""Moving finished tournaments from Redis to the archive, as games move (``mover.py``): archive
each (its log's record audited with ``shared.audit.tournament``: its chain, every table's game,
every result and standing recomputed), then, once its retention is up, let Redis forget it.

A tournament's table games are read where they are: Redis, or the archive once they have left
it (a tournament finishes long after its first round's games were archived). One that fails its
audit, or whose games cannot all be read, is not archived: it stays whole in Redis, is logged
and tried again ``RETRY_SECONDS`` later. The steps, and why a crash between any two loses
nothing, are ``shared/infra/retention.py``'s (``TournamentRetention``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import Any

import structlog

from shared.archive.base import Archive, ArchiveError
from shared.archive.mover import (
    GONE,
    LIVE,
    Moving,
)
from shared.archive.sealed import Headed, Row
from shared.archive.tournaments import TournamentRecord, prepare, tournament_record
from shared.audit.source import SourceError, StoredGame, load_game
from shared.audit.tournament import GameSource, TournamentAudit, audit_tournament, table_games
from shared.infra import codec
from shared.infra.client import RedisClient
from shared.infra.keys import Keys
from shared.infra.retention import TournamentRetention
from shared.infra.store.redis import EVENT_FIELD, RedisEventStore
from shared.tournament.events import TournamentFinished

FINISHED = TournamentFinished.TYPE  # a finished tournament's log always ends with one


def full_audit(log: StoredGame, games: dict[str, GameSource]) -> TournamentAudit:
    """Every check of ``rummy audit --tournament`` on the log and its tables' games."""
    return audit_tournament(
        log.events, games, tournament_id=log.game_id, head=log.head, defects=log.defects
    )


async def table_sources(
    games: RedisEventStore, archive: Archive, game_ids: Iterable[str]
) -> dict[str, GameSource]:
    """Each table's game as Redis holds it, else as the archive does, else why neither does
    (the audit reports it). :class:`ArchiveError` if the archive cannot be read."""
    out: dict[str, GameSource] = {}
    for game_id in game_ids:
        try:
            game = await load_game(games, game_id)
        except (SourceError, ValueError):
            game = None
        if game is None or not game.events:  # (left Redis, perhaps while it was read)
            record = await archive.fetch(game_id)
            if record is not None and record.head is not None:
                game = StoredGame(game_id, record.events, record.head)
        out[game_id] = game if game is not None else "it is neither in Redis nor archived"
    return out


class TournamentMover(Moving):
    """One deployment's finished tournaments on their way to ``archive``."""

    noun = "tournament"
    retention: TournamentRetention

    def __init__(
        self,
        client: RedisClient,
        keys: Keys,
        archive: Archive,
        retain_seconds: float,
        clock: Callable[[], float] = time.time,
        *,
        audit: Callable[[StoredGame, dict[str, GameSource]], TournamentAudit] = full_audit,
        on_write: Callable[[float], None] | None = None,
        log: Any = None,
    ) -> None:
        """As ``Mover``'s; ``audit``: the tournament's audit (tests put another)."""
        super().__init__(
            archive,
            TournamentRetention(client, keys),
            retain_seconds,
            clock,
            log or structlog.get_logger("archive"),
            on_write,
        )
        self.client = client
        self.audit = audit
        self.logs = RedisEventStore(client, keys.tournament_logs())
        self.games = RedisEventStore(client, keys.prefix)

    async def archived(self, item: str) -> Headed | None:
        return await self.archive.tournament_entry(item)

    def _row(self, record: Any, now: float) -> Row[Any]:
        return prepare(record, now)

    async def _write(self, row: Row[Any]) -> Any:
        return await self.archive.write_tournament(row)

    async def archive_one(self, item: str) -> str:
        return await self.archive_tournament(item)

    async def archive_tournament(self, tournament_id: str) -> str:
        """Archive one due tournament; the outcome (a tournament refused is tried again
        ``RETRY_SECONDS`` later)."""
        now = self.clock()
        try:
            log = await load_game(self.logs, tournament_id)
        except (SourceError, ValueError):
            await self.client.zrem(self.retention.due_key, tournament_id)
            return GONE
        if not any(e.type == FINISHED for e in log.events):
            await self.client.zrem(self.retention.due_key, tournament_id)
            return LIVE
        record, why = await self._audited(log, now)
        if record is None:
            return await self._refuse(tournament_id, why, now)
        return await self._store(tournament_id, record, now)

    async def _audited(self, log: StoredGame, now: float) -> tuple[TournamentRecord | None, str]:
        """The tournament's record if its log is whole and passes its audit, else None and
        why not."""
        if log.defects:
            version, why = log.defects[0]
            return None, f"version {version} cannot be read: {why}"
        try:
            record = tournament_record(log.events, now)
        except ArchiveError as err:
            return None, str(err)
        games = await table_sources(self.games, self.archive, table_games(log.events))
        verdict = await asyncio.to_thread(self.audit, log, games)
        if not verdict.ok:
            first = verdict.differences[0] if verdict.differences else None
            where = f": {first.check} at {first.where()}: {first.message}" if first else ""
            return None, f"its audit failed{where}"
        return record, ""

    async def sweep(self) -> int:
        """Note as due every finished tournament in the tournaments' index that is neither due
        nor kept (no news tells the archiver of a tournament's finish); how many it noted."""
        noted: list[str] = []
        async for raw in self.client.sscan_iter(self.logs.keys.games(), count=500):
            tournament_id = raw.decode() if isinstance(raw, bytes) else str(raw)
            if await self.retention.known(tournament_id) or not await self._has_finished(
                tournament_id
            ):
                continue
            noted.append(tournament_id)
        await self.retention.note_due(noted, self.clock())
        return len(noted)

    async def _has_finished(self, tournament_id: str) -> bool:
        """Whether the log's last event is its ``TournamentFinished`` (a ruling after the
        finish appends the final standings again)."""
        tail = await self.client.xrevrange(self.logs.keys.events(tournament_id), "+", "-", count=1)
        for _, fields in tail or []:
            raw = fields.get(EVENT_FIELD)
            if isinstance(raw, bytes):
                try:
                    return codec.decode_stored(raw).type == FINISHED
                except codec.CodecError:
                    return True  # a damaged tail: the archive pass reports it
        return False
