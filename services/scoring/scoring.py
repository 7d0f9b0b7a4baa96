"""The scoring service: follows the feed; when a round ends it computes the score sheet with the
pure scoring module, appends ``ScoresRecorded`` (expected version, command id ``scores:<round>``
so a redelivered ending appends nothing twice) and asks the referees to carry on; and it keeps
the projections (standings, leaderboard, player statistics) up to date.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge

from services.scoring.projections import Projections
from shared.core.codes import Rejection
from shared.core.commands import Context, RecordScores
from shared.core.decide import decide, round_sheet
from shared.infra.bus import (
    FEED_MAXLEN,
    SCORING,
    Bus,
    CommandEntry,
    parse_json_field,
    stream_batches,
)
from shared.infra.gamelog import GameLog
from shared.infra.keys import Keys
from shared.infra.settings import Settings
from shared.infra.store.base import VersionConflict
from shared.infra.store.redis import RedisEventStore

INTERESTING = {
    "RoundEnded",
    "ScoresRecorded",
    "MatchEnded",
    "SeedRevealed",
    "PlayerSeated",
    "RoundDealt",
}


class Scoring:
    """One scoring process (several may run; every step is idempotent)."""

    def __init__(self, client: Any, settings: Settings) -> None:
        self.client = client
        self.settings = settings
        self.keys = Keys(settings.prefix)
        self.store = RedisEventStore(client, settings.prefix)
        self.games = GameLog(self.store, settings.cache_size)
        self.bus = Bus(client, self.keys, settings.partitions)
        self.projections = Projections(client, self.keys)
        self.consumer = settings.consumer_name()
        self.log = structlog.get_logger("scoring").bind(consumer=self.consumer)
        self.registry = CollectorRegistry()
        self.sheets = Counter(
            "scoring_sheets_total", "Score sheets recorded", registry=self.registry
        )
        self.handled = Counter(
            "scoring_feed_entries_total", "Feed entries handled", registry=self.registry
        )
        self.failures = Counter(
            "scoring_failures_total",
            "Feed entries whose handling raised",
            registry=self.registry,
        )
        self.pending = Gauge(
            "scoring_feed_pending",
            "Feed entries read but not acknowledged",
            ["partition"],
            registry=self.registry,
        )
        self.stopping = asyncio.Event()
        self.running = False

    async def run(self) -> None:
        """Follow every feed partition until ``stop``."""
        await self.bus.ensure_groups(SCORING, self.bus.feed_streams())
        self.running = True
        loops = [asyncio.create_task(self._follow(p)) for p in range(self.settings.partitions)]
        try:
            await self.stopping.wait()
        finally:
            self.running = False
            for task in loops:
                task.cancel()
            await asyncio.gather(*loops, return_exceptions=True)

    def stop(self) -> None:
        self.stopping.set()

    async def _follow(self, partition: int) -> None:
        stream = self.keys.feed(partition)
        # First what this consumer read but did not acknowledge (a crash), then new entries.
        start = "0"
        while not self.stopping.is_set():
            try:
                reply = await self.client.xreadgroup(
                    SCORING,
                    self.consumer,
                    {stream: start},
                    count=self.settings.batch,
                    block=1000,
                )
                entries = [e for _, batch in stream_batches(reply) for e in batch]
                if start == "0" and not entries:
                    start = ">"
                    continue
                for entry_id, fields in entries:
                    await self.handle(stream, entry_id, fields)
                claimed = await self.client.xautoclaim(
                    stream,
                    SCORING,
                    self.consumer,
                    min_idle_time=self.settings.claim_idle_ms,
                    start_id="0-0",
                    count=self.settings.batch,
                )
                for entry_id, fields in claimed[1]:
                    if fields:
                        await self.handle(stream, entry_id, fields)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                self.failures.inc()
                self.log.warning("following the feed failed; retrying", error=str(err))
                await asyncio.sleep(0.5)

    async def handle(self, stream: str, entry_id: bytes, fields: dict[Any, Any]) -> None:
        """React to one feed entry, then acknowledge it."""
        doc = parse_json_field(fields)
        if doc is not None and set(doc.get("types", [])) & INTERESTING:
            await self.catch_up(str(doc["game"]))
        await self.client.xack(stream, SCORING, entry_id)
        self.handled.inc()

    async def catch_up(self, game_id: str) -> None:
        """Record the score sheet of a finished round if it is missing, ask for the next round
        if it is not dealt yet, and refresh the projections."""
        for _ in range(5):
            loaded = await self.games.load(game_id, fresh=True)
            state = loaded.state
            if state.phase == "scoring":
                sheet = round_sheet(state.rules, state.rounds[-1])
                command = RecordScores(
                    state.round, sheet.winner, sheet.went_out, sheet.seats, sheet.scores
                )
                decision = decide(state, command, Context(time.time()))
                if isinstance(decision, Rejection):
                    self.log.error("score sheet refused", game=game_id, code=decision.code)
                    return
                try:
                    _, loaded = await self.games.append(
                        game_id,
                        loaded,
                        decision,
                        "scoring",
                        f"scores:{state.round}",
                        None,
                        time.time(),
                    )
                except VersionConflict:
                    continue
                self.sheets.inc()
                key, news = self.bus.news(game_id, loaded.version, ["ScoresRecorded"])
                await self.client.xadd(key, news, maxlen=FEED_MAXLEN, approximate=True)
                self.log.info("scores recorded", game=game_id, round=state.round)
                state = loaded.state
            if state.phase == "next":
                await self.bus.send(
                    CommandEntry(game_id, "continue", f"continue:{state.round}", at=time.time())
                )
            await self.projections.apply(state)
            return

    async def rebuild(self) -> dict[str, Any]:
        """Drop every projection and rebuild it from the logs; report the differences from
        what was live."""
        game_ids = await self.store.list_games()
        before = await self.projections.snapshot(game_ids)
        await self.projections.drop(game_ids)
        for game_id in game_ids:
            loaded = await self.games.load(game_id, fresh=True)
            if loaded.version:
                await self.projections.apply(loaded.state)
        after = await self.projections.snapshot(game_ids)
        differences = [
            part for part in ("players", "leaderboard", "games") if before[part] != after[part]
        ]
        return {"games": len(game_ids), "differences": differences}

    async def ready(self) -> tuple[bool, str]:
        if not self.running:
            return False, "not following the feed"
        try:
            await self.client.ping()
        except Exception as err:
            return False, f"redis: {err}"
        return True, "following the feed"
