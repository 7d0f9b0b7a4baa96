"""The archiver: moves finished games from Redis to the archive, so that Redis holds the live
games only (``docs/archive.md``).

Its own service rather than a part of scoring: its work is another database's (PostgreSQL, or
the SQLite file), whose outages and slowness must not hold up the score sheets a live game is
waiting for, and it scales (and is paused, for a restore) on its own. It follows the feed in a
group of its own (``archiver``) and notes each game whose ``MatchEnded`` it hears of as due;
a sweep of the games index every ``sweep_seconds`` catches the games whose news it missed
(the feed is trimmed; the archiver may have been down). Each pass archives the due games and
forgets the archived ones whose retention is up (``shared/archive/mover.py``; the order that
makes a kill at any point harmless is ``shared/infra/retention.py``'s). Finished tournaments
go the same way (``shared/archive/tournament_mover.py``): no news tells of a tournament's
finish, so the same sweep looks through the tournaments' index for them, and each pass archives
them (audited, every table's game with them) and forgets them after the games.

It also keeps the streams bounded (``shared/infra/trimming.py``): every ``tidy_seconds`` the
command streams (the games' and the tournaments') and the feed are trimmed below what their
groups still need, and now and then the reply streams of gateways that are gone are given a
time to live.

Ready when it follows the feed, its heartbeat reached Redis and the archive answered its last
call (``reach.py``: checked between passes when no game asked it, so an archive that goes away
is noticed with none due). It heartbeats among the ``archivers`` and, as the first live one by
name, forgets the departed archivers' consumers in the feed groups (each start is a new
consumer).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import structlog
from prometheus_client import Counter, Gauge, Histogram

from services.archiver.reach import ArchiveReach
from shared.archive.base import Archive, ArchiveError
from shared.archive.mover import BATCH, FAILED, Mover, Moving
from shared.archive.tournament_mover import TournamentMover
from shared.infra.bus import Bus
from shared.infra.client import RedisClient
from shared.infra.consumer import ConsumerMetrics, Delivery, Reading, StreamConsumer
from shared.infra.departed import Departed
from shared.infra.keys import Keys
from shared.infra.members import Members
from shared.infra.observability import service_registry
from shared.infra.protocol import MalformedEntry, News
from shared.infra.readiness import PING_SECONDS, Readiness
from shared.infra.settings import Settings
from shared.infra.trimming import FEED_KEEP, Trimmer

ARCHIVER = "archiver"
PASS_SECONDS = 1.0  # between passes when nothing new is heard of
SWEEP_SECONDS = 30.0
OPEN_RETRY_SECONDS = 2.0  # between tries to open an archive that is away
TIDY_EVERY = 20  # heartbeats between two looks for departed consumers
TRIM_SECONDS = 5.0  # between two trims of the streams
ORPHANS_EVERY = 60  # trims between two looks for orphaned reply streams
WRITE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Archiver:
    """One archiver process (several may run: every step is idempotent)."""

    def __init__(
        self,
        client: RedisClient,
        settings: Settings,
        archive: Archive,
        clock: Callable[[], float] = time.time,
        *,
        readiness: Readiness | None = None,
        reach: ArchiveReach | None = None,
    ) -> None:
        """``clock``: unix seconds, for the retention; ``readiness``, ``reach``: where Redis's
        and the archive's outcomes are noted (tests step their clocks)."""
        self.client = client
        self.settings = settings
        self.archive = archive
        self.keys = Keys(settings.prefix)
        self.bus = Bus(client, self.keys, settings.partitions)
        self.consumer = settings.consumer_name()
        self.log = structlog.get_logger("archiver").bind(consumer=self.consumer)
        self.registry = service_registry()
        self.outcomes = Counter(
            "archiver_games_total",
            "Games looked at, by outcome",
            ["outcome"],
            registry=self.registry,
        )
        self.forgotten = Counter(
            "archiver_forgotten_total", "Archived games removed from Redis", registry=self.registry
        )
        self.tournament_outcomes = Counter(
            "archiver_tournaments_total",
            "Tournaments looked at, by outcome",
            ["outcome"],
            registry=self.registry,
        )
        self.tournaments_forgotten = Counter(
            "archiver_tournaments_forgotten_total",
            "Archived tournaments removed from Redis",
            registry=self.registry,
        )
        self.failures = Counter(
            "archiver_failures_total", "Passes or feed entries that failed", registry=self.registry
        )
        self.trimmed = Counter(
            "archiver_trimmed_total", "Stream entries trimmed", ["stream"], registry=self.registry
        )
        self.given_up = Counter(
            "archiver_given_up_total", "Feed entries given up", registry=self.registry
        )
        self.writes = Histogram(
            "archiver_write_seconds",
            "One archive write: the row stored and read back",
            buckets=WRITE_BUCKETS,
            registry=self.registry,
        )
        self.waiting = Gauge(
            "archiver_set_size",
            "Games (and tournaments: tournaments_due, tournaments_kept) due (not archived yet) "
            "and kept (archived, in Redis)",
            ["set"],
            registry=self.registry,
        )
        self.mover = Mover(
            client,
            self.keys,
            archive,
            settings.retain_seconds,
            clock,
            on_write=self._wrote,
            log=self.log,
        )
        self.tournaments = TournamentMover(
            client,
            self.keys,
            archive,
            settings.retain_seconds,
            clock,
            on_write=self._wrote,
            log=self.log,
        )
        self.clock = clock
        self.members = Members(client, self.keys.archivers(), self.consumer, settings.lease_ms)
        self.beat_seconds = min(PING_SECONDS, settings.lease_ms / 3000)
        self.readiness = readiness or Readiness()
        self.departed = Departed(client, ARCHIVER)
        self.trimmer = Trimmer(client, self.keys)
        self.trim_seconds = TRIM_SECONDS
        self.reach = reach or ArchiveReach(time.monotonic)
        self.pass_seconds = PASS_SECONDS
        self.sweep_seconds = SWEEP_SECONDS
        self.stopping = asyncio.Event()
        self.wake = asyncio.Event()
        self.running = False
        reading = Reading.from_settings(
            settings,
            ARCHIVER,
            self.bus.feed_streams(),
            None,  # an entry given up leaves its game to the sweep
            consumer=self.consumer,
            block_ms=min(1000, max(settings.claim_idle_ms, 50)),
            gather_seconds=0.05,
        )
        counts = ConsumerMetrics(self.failures, self.given_up, by_reason=False)
        self.reader = StreamConsumer(
            client, reading, self.handle, counts, wants=self._wanted, log=self.log
        )

    async def run(self) -> None:
        """Open the archive, follow the feed, archive and forget until ``stop``."""
        if not await self._open() or not await self.reader.join(self.stopping):
            return
        self.running = True
        await self.beat()
        self.reader.start()
        loops = [
            asyncio.create_task(self._work_loop(), name="archive"),
            asyncio.create_task(self._sweep_loop(), name="sweep"),
            asyncio.create_task(self._presence_loop(), name="presence"),
            asyncio.create_task(self._trim_loop(), name="trim"),
        ]
        try:
            await self.stopping.wait()
        finally:
            self.running = False
            await self.reader.drain()
            for task in loops:
                task.cancel()
            await asyncio.gather(*loops, return_exceptions=True)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.members.leave(), 2.0)
            await self.archive.close()
            self.log.info("archiver stopped")

    def stop(self) -> None:
        """Stop: the pass in hand is cut at its next step (each step is whole or undone)."""
        self.stopping.set()

    async def ready(self) -> tuple[bool, str]:
        """Ready when following the feed with Redis and the archive both answering (the last
        known state: no call of its own). Redis's reason comes first: a pass held up by Redis
        leaves the archive unasked too."""
        if self.stopping.is_set():
            return False, "draining"
        trouble = self.reach.trouble()
        if not self.running:
            return False, trouble or "not following the feed"
        ready, why = self.readiness.answer("archiving")
        if ready and trouble is not None:
            return False, trouble
        return ready, why

    async def _open(self) -> bool:
        while not self.stopping.is_set():
            try:
                await self.archive.open()
                self.reach.reached()
                return True
            except ArchiveError as err:
                self.reach.failed(f"archive: {err}")
                self.log.warning("opening the archive failed; retrying", error=str(err))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), OPEN_RETRY_SECONDS)
        return False

    # --- the feed -------------------------------------------------------------------------

    def _wanted(self, delivery: Delivery) -> bool:
        try:
            return "MatchEnded" in News.decode(delivery.fields).types
        except MalformedEntry:
            return False

    async def handle(self, delivery: Delivery) -> None:
        """Note the game of a ``MatchEnded`` as due (acknowledged once noted)."""
        news = News.decode(delivery.fields)
        await self.mover.retention.note_due([news.game], self.clock())
        self.wake.set()

    # --- the passes -----------------------------------------------------------------------

    async def one_pass(self) -> dict[str, int]:
        """Archive what is due (a batch at a time while batches come full), then forget what
        has been kept long enough: the games, then the tournaments. The games' outcomes
        counted, and the tournaments' that happened as ``tournament_<outcome>``."""
        total = await self._moved(self.mover, self.outcomes, self.forgotten)
        tournaments = await self._moved(
            self.tournaments, self.tournament_outcomes, self.tournaments_forgotten
        )
        total.update({f"tournament_{name}": n for name, n in tournaments.items() if n})
        for prefix, mover in (("", self.mover), ("tournaments_", self.tournaments)):
            for name, size in (await mover.retention.sizes()).items():
                self.waiting.labels(prefix + name).set(size)
        return total

    async def _moved(self, mover: Moving, outcomes: Counter, forgotten: Counter) -> dict[str, int]:
        """One pass of ``mover`` (games' or tournaments'); its outcomes counted."""
        total: dict[str, int] = {}
        while not self.stopping.is_set():
            counts = await mover.archive_due(BATCH)
            for outcome, n in counts.items():
                outcomes.labels(outcome).inc(n)
                total[outcome] = total.get(outcome, 0) + n
            if FAILED in counts:
                raise ArchiveError(f"the archive did not take a {mover.noun} (see the log)")
            if sum(counts.values()) < BATCH:
                break
        while not self.stopping.is_set():
            gone = await mover.forget_expired(BATCH)
            if gone:
                self.reach.reached()  # each one forgotten had its row read back
            forgotten.inc(gone)
            total["forgotten"] = total.get("forgotten", 0) + gone
            if gone < BATCH:
                break
        return total

    def _wrote(self, seconds: float) -> None:
        """An archive write's duration: counted, and the archive noted as answering."""
        self.writes.observe(seconds)
        self.reach.reached()

    async def _work_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                await self.one_pass()
            except asyncio.CancelledError:
                raise
            except ArchiveError as err:
                self.failures.inc()
                self.reach.failed(f"archive: {err}")
                self.log.warning("an archive pass failed", error=str(err))
            except Exception as err:
                self.failures.inc()
                self.log.warning("an archive pass failed", error=str(err))
            if self.reach.check_due():
                await self.reach.check_archive(self.archive)
            self.wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), self.pass_seconds)

    async def _sweep_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                if await self.mover.sweep() + await self.tournaments.sweep():
                    self.wake.set()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                self.failures.inc()
                self.log.warning("sweeping the games' or tournaments' index failed", error=str(err))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), self.sweep_seconds)

    # --- bounds ---------------------------------------------------------------------------

    async def trim(self) -> int:
        """Trim the command streams (the games' and the tournaments') and the feed below what
        their groups still need (the feed's last ``FEED_KEEP`` entries stay, for the gateways);
        the entries trimmed."""
        total = 0
        for kind, streams, keep in (
            ("commands", self.bus.command_streams(), 0),
            ("tournament_commands", [self.keys.tournament_commands()], 0),
            ("feed", self.bus.feed_streams(), FEED_KEEP),
        ):
            for stream in streams:
                gone = await self.trimmer.trim(stream, keep)
                self.trimmed.labels(kind).inc(gone)
                total += gone
        return total

    async def _trim_loop(self) -> None:
        rounds = 0
        while not self.stopping.is_set():
            try:
                await self.trim()
                if rounds % ORPHANS_EVERY == 0:
                    await self.trimmer.expire_orphans()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                self.failures.inc()
                self.log.warning("trimming the streams failed", error=str(err))
            rounds += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), self.trim_seconds)

    # --- presence -------------------------------------------------------------------------

    async def beat(self) -> list[str]:
        """Heartbeat among the archivers, its outcome noted as the readiness; the live ones."""
        try:
            live = await self.members.beat()
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self.readiness.failed(f"redis: {err}")
            return []
        self.readiness.reached()
        return live

    async def _presence_loop(self) -> None:
        beats = 0
        while not self.stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), self.beat_seconds)
            live = await self.beat()
            beats += 1
            if beats % TIDY_EVERY == 0 and live and live[0] == self.consumer:
                try:
                    keep = {*live, self.consumer}
                    await self.departed.forget(self.bus.feed_streams(), keep.__contains__)
                except asyncio.CancelledError:
                    raise
                except Exception as err:
                    self.log.warning("forgetting departed consumers failed", error=str(err))
