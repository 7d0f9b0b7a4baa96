"""The referee: reads commands from the partitioned command streams, decides with the engine,
appends the events, and only then acknowledges.

- Several referees share one consumer group; concurrent commands for one game resolve through
  the expected version (reload and decide again on a conflict; never a double apply).
- A retried command id returns the original outcome (looked up before deciding).
- A game whose log has left Redis since it was cached (forgotten once archived, or lost with
  Redis's data) takes no more commands: refused ``game_archived``, its cached state dropped. A
  log that went back (another copy of Redis) is decided on as Redis has it.
- A command is acknowledged last, only once every side effect of it is written (the news, the
  awaiting-scores note, the turn's deadline, the answer): Redis out of memory refuses those
  writes but not the ``XACK``, and a command nobody sends again (a timeout, scoring's
  ``continue``) acknowledged without them would leave a turn without its timer or a round
  unscored. Unacknowledged, it is claimed again; the append answers its command id as a
  repeat, and the repeat writes every side effect again.
- Reading, claiming, the delivery limit and the dead letters are ``shared/infra/consumer.py``'s:
  a crashed peer's pending commands are claimed after ``claim_idle_ms``; an entry handled
  ``max_deliveries`` times without success goes to the dead-letter stream at its next delivery
  (and its sender, if one waits, is answered ``command_failed``). A delivery that failed for
  Redis's reasons (out of memory, unreachable) is not counted.
- Time is Redis's (``shared/infra/clock.py``), never the host's: decisions' ``now``, the turn
  deadlines and their firing agree whichever referee handles them.
- Turn deadlines live in Redis (sorted sets per partition), so a timer survives a restart; the
  ``timeout:<turn>`` command id makes it fire once even if two referees race for it.
- Every append is announced on the feed, which gateways and the scoring service follow.
- Readiness is last known (``shared/infra/readiness.py``): the lease heartbeats' outcome and the
  draining flag, never a Redis call of its own. The first live referee by name forgets the
  departed referees' consumers (``shared/infra/departed.py``) every ``TIDY_EVERY`` refreshes.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
from prometheus_client import Counter, Gauge, Histogram

from shared.core.botnames import bot_of_command_id
from shared.core.codes import Rejection
from shared.core.commands import (
    SEAT_COMMANDS,
    SERVICE_COMMAND_PREFIX,
    SERVICE_SEAT_COMMANDS,
    Cancel,
    Command,
    CommandError,
    Context,
    Continue,
    CreateGame,
    Expire,
    Start,
    Timeout,
    seat_command,
    sit_command,
)
from shared.core.decide import decide
from shared.core.events import (
    CommandRejected,
    Event,
    PlayerSeated,
    RoundEnded,
    SeatReturned,
    event_from,
)
from shared.core.shuffle import commitment
from shared.core.state import GameState
from shared.infra.autopipe import autopipe
from shared.infra.bus import FEED_MAXLEN, REFEREES, REPLY_MAXLEN, Bus, fingerprint, partition_of
from shared.infra.client import CommandGroup, RedisClient
from shared.infra.clock import RedisClock
from shared.infra.consumer import ConsumerMetrics, DeadLetter, Delivery, Reading, StreamConsumer
from shared.infra.departed import Departed
from shared.infra.gamelog import GameLog, Loaded, change_of, fold_stored
from shared.infra.keys import Keys, awaiting_member
from shared.infra.leases import PartitionLeases
from shared.infra.observability import service_registry
from shared.infra.protocol import Answer, Change, CommandEntry, MalformedEntry
from shared.infra.readiness import Readiness
from shared.infra.settings import Settings
from shared.infra.store.base import AppendResult, HeadMismatch, VersionConflict
from shared.infra.store.redis import RedisEventStore
from shared.infra.summary import SUMMARY_SECONDS, encode_summary, summary_key, summary_of
from shared.infra.transient import refused

MAX_CONFLICTS = 10
EXPIRY = "expire"  # the member ``<game>|expire`` of the timers: the game's expiry (Decision 18)
MOVED = "moved"  # the key ``game:{<game>}:moved``: when the game was last moved in
TIMER_RETRY = 5.0  # seconds after which a fired deadline fires again if nothing handled it
SEED_CACHE = 10_000
TIDY_EVERY = 10  # lease refreshes between two looks for departed consumers
GAUGE_SECONDS = 5.0  # between two updates of the per-partition stream gauges


@dataclass(frozen=True)
class Outcome:
    """What the sender of a command learns (the gateway turns it into the HTTP answer)."""

    status: str  # "accepted", "rejected" (recorded attempt) or "refused" (nothing appended)
    version: int
    head: str
    code: str | None = None
    message: str | None = None
    seat: int | None = None
    duplicate: bool = False

    def answer(self, rid: str, game: str) -> Answer:
        """The answer to the sender of request ``rid``."""
        return Answer(rid, game, **self.__dict__)


class Effects:
    """What handling one command leaves to write, in two steps. ``writes``: what Redis may
    refuse (out of memory refuses every write that adds data): the news, the awaiting-scores
    note, the turn's deadline, the answer. ``settles``: removals (an ended turn's deadline, a
    fired timer, a failed create's seed) and the acknowledgement, sent only once every write is
    in, so that an entry whose side effects are not all written stays pending and is handled
    again (and a timer it would remove still fires)."""

    def __init__(self, client: RedisClient) -> None:
        self.writes = client.pipeline(transaction=False)
        self.settles = client.pipeline(transaction=False)

    async def apply(self) -> None:
        """Send the writes; if every one is in, the settles. Raises ``WritesRefused`` (and
        sends no settle) if any write was refused."""
        await self.write()
        await self.settle()

    async def write(self) -> None:
        """Send the writes; raises ``WritesRefused`` if any was refused."""
        refused("side effects", await self.writes.execute(raise_on_error=False))

    async def settle(self) -> None:
        """Send the settles (after ``write`` succeeded)."""
        await self.settles.execute()


class RefereeMetrics:
    """The referee's Prometheus metrics, on a registry of its own."""

    def __init__(self) -> None:
        self.registry = service_registry()
        self.commands = Counter(
            "referee_commands_total",
            "Commands handled",
            ["kind", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "referee_command_seconds",
            "Time from reading a command to acknowledging it",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
            registry=self.registry,
        )
        self.conflicts = Counter(
            "referee_version_conflicts_total",
            "Appends retried after a version conflict",
            registry=self.registry,
        )
        self.failures = Counter(
            "referee_failures_total", "Commands whose handling raised", registry=self.registry
        )
        self.dead_letters = Counter(
            "referee_dead_letters_total",
            "Entries moved to the dead-letter stream",
            ["reason"],
            registry=self.registry,
        )
        self.claimed = Counter(
            "referee_claimed_total",
            "Pending entries claimed from idle consumers",
            registry=self.registry,
        )
        self.timers = Counter(
            "referee_timers_fired_total",
            "Turn deadlines turned into timeout commands",
            registry=self.registry,
        )
        self.pending = Gauge(
            "referee_stream_pending",
            "Entries read but not yet acknowledged, per partition",
            ["partition"],
            registry=self.registry,
        )
        self.lag = Gauge(
            "referee_stream_lag",
            "Entries not yet read by the group, per partition",
            ["partition"],
            registry=self.registry,
        )


class Referee:
    """One referee process's work (run several for throughput and failover)."""

    def __init__(
        self,
        client: RedisClient,
        settings: Settings,
        clock: Callable[[], float] = time.monotonic,
        *,
        lease_time: Callable[[], float] | None = None,
        readiness: Readiness | None = None,
    ) -> None:
        """``lease_time``: the time the leases are kept in (tests step it; None: Redis's own
        ``TIME``); ``readiness``: where the lease loop notes its outcomes (tests step its
        clock; None: stale after two missed refreshes)."""
        # Concurrent commands' Redis calls share pipelines (blocking reads go straight through).
        self.client = autopipe(client)
        self.settings = settings
        # The time decisions and deadlines are taken from: Redis's, carried by the host clock
        # ``clock`` (any base: only how it moves counts; tests give skewed or moved ones).
        self.clock = RedisClock(self.client, clock)
        self.keys = Keys(settings.prefix)
        self.store = RedisEventStore(self.client, settings.prefix)
        self.games = GameLog(self.store, settings.cache_size)
        self.bus = Bus(self.client, self.keys, settings.partitions)
        self.consumer = settings.consumer_name()
        self.metrics = RefereeMetrics()
        self.leases = PartitionLeases(
            self.client,
            self.keys,
            self.consumer,
            settings.partitions,
            settings.lease_ms,
            lease_time,
        )
        self.refresh_seconds = settings.lease_ms / 3000
        self.readiness = readiness or Readiness(max(1.0, 2 * self.refresh_seconds))
        self.departed = Departed(self.client, REFEREES)
        self._refreshes = 0
        self.held: set[str] = set()  # the command streams of the partitions leased to us
        self.log = structlog.get_logger("referee").bind(consumer=self.consumer)
        self.stopping = asyncio.Event()
        self.running = False
        self._locks: dict[str, asyncio.Lock] = {}
        self._seeds: OrderedDict[str, bytes] = OrderedDict()
        reading = Reading.from_settings(
            settings,
            REFEREES,
            self.bus.command_streams(),
            self.keys.dead_letters(),
            consumer=self.consumer,
            # Short blocks: a partition handed over is read within a quarter second (on one
            # Redis, where one read covers every partition held and must end to take in a new
            # one). On a cluster each partition has a read of its own, which takes in its
            # partition within ``idle_seconds`` of its lease whatever the block; only a
            # partition handed away is still read, for up to a second, by the referee that lost
            # it (safe: every append is checked against the game's version).
            block_ms=250,
            alone_block_ms=1000,
            # Back-pressure: no more than a few batches in hand, so that one busy referee does
            # not hoard entries its peers could take.
            concurrency=settings.batch * 4,
            idle_seconds=min(0.25, settings.lease_ms / 3000),
        )
        counts = ConsumerMetrics(
            self.metrics.failures, self.metrics.dead_letters, claimed=self.metrics.claimed
        )
        self.reader = StreamConsumer(
            self.client,
            reading,
            self.handle,
            counts,
            readable=self.held.__contains__,
            on_dead_letter=self._tell_sender,
            log=self.log,
        )

    # --- the loops ------------------------------------------------------------------------

    async def run(self) -> None:
        """Consume, claim and fire timers until ``stop``; then drain within the deadline."""
        if not await self.reader.join(self.stopping):
            return
        self.running = True
        try:
            await self.clock.sync()
        except Exception as err:
            self.log.warning(
                "reading Redis's time failed; the host's time until it answers", error=str(err)
            )
        await self._refresh_leases()
        self.reader.start()
        loops = [
            asyncio.create_task(self._lease_loop(), name="leases"),
            asyncio.create_task(self._timer_loop(), name="timers"),
            asyncio.create_task(self._gauge_loop(), name="gauges"),
            asyncio.create_task(self.clock.follow(self.stopping), name="clock"),
        ]
        try:
            await self.stopping.wait()
        finally:
            self.running = False
            for task in loops:
                task.cancel()
            await asyncio.gather(*loops, return_exceptions=True)
            unfinished = await self.reader.drain()
            try:  # peers take the partitions over at once instead of after the lease runs out
                await asyncio.wait_for(self.leases.give_up(), 2.0)
            except Exception as err:
                self.log.warning("giving up the leases failed", error=str(err))
            self.log.info("referee stopped", unfinished=unfinished)

    async def _refresh_leases(self) -> None:
        try:
            held = await self.leases.refresh()
        except asyncio.CancelledError:
            raise
        except Exception as err:  # Redis away: keep reading what we held (peers may too)
            self.log.warning("renewing the partition leases failed", error=str(err))
            self.readiness.failed(f"redis: {err}")
            held = set(self.leases.held)  # less any lease a renewal found lost
        else:
            self.readiness.reached()
        streams = {self.keys.command_stream(p) for p in held}
        if streams != self.held:
            self.log.info("partitions held", partitions=sorted(held))
        self.held.clear()  # in place: the reader asks this very set
        self.held.update(streams)

    async def _lease_loop(self) -> None:
        while not self.stopping.is_set():
            await asyncio.sleep(self.refresh_seconds)
            await self._refresh_leases()
            self._refreshes += 1
            if self._refreshes % TIDY_EVERY == 0:
                try:
                    await self.forget_departed()
                except asyncio.CancelledError:
                    raise
                except Exception as err:
                    self.log.warning("forgetting departed consumers failed", error=str(err))

    async def forget_departed(self) -> list[str]:
        """On the first live referee by name (one is enough): delete from the command groups
        the consumers of referees that are gone (not live, holding no lease) once nothing is
        pending for them. Returns them (``stream consumer``)."""
        alive = self.leases.still_here()
        if alive is None:
            return []
        gone = await self.departed.forget(self.bus.command_streams(), alive)
        if gone:
            self.log.info("departed consumers forgotten", consumers=gone[:20], count=len(gone))
        return gone

    async def _gauge_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                await self.update_stream_gauges()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                self.log.warning("updating the stream gauges failed", error=str(err))
            await asyncio.sleep(GAUGE_SECONDS)

    def stop(self) -> None:
        """Stop reading new commands (in-flight ones finish, within the drain deadline)."""
        self.stopping.set()

    async def claim(self, partition: int) -> int:
        """Take over a partition's entries idle longer than ``claim_idle_ms`` (a crashed or stuck
        peer's); dead-letter those past ``max_deliveries``. Returns how many were claimed."""
        return await self.reader.claim(self.keys.command_stream(partition))

    async def _timer_loop(self) -> None:
        """Fire the deadlines of the partitions this referee holds (their holder after a
        failover fires what a dead referee left), all of them at once."""
        while not self.stopping.is_set():
            await asyncio.sleep(0.2)
            held = [
                p
                for p in range(self.settings.partitions)
                if self.keys.command_stream(p) in self.held
            ]
            results = await asyncio.gather(
                *(self.fire_timers(p) for p in held), return_exceptions=True
            )
            for partition, result in zip(held, results, strict=True):
                if isinstance(result, asyncio.CancelledError):
                    raise result
                if isinstance(result, Exception):
                    self.log.warning("timers failed", partition=partition, error=str(result))

    async def fire_timers(self, partition: int, now: float | None = None) -> int:
        """Turn every passed deadline into a ``timeout`` command, then put the deadline off by
        ``TIMER_RETRY`` seconds rather than removing it: should the command be lost, it fires
        again. The referee that handles the command removes the timer (or, if it came early,
        puts the true deadline back); the command id makes a timeout apply once."""
        key = self.keys.timers(partition)
        when = self.clock() if now is None else now
        due = await self.client.zrangebyscore(key, "-inf", when, start=0, num=100)
        for member in due:
            game, _, number = _text(member).rpartition("|")
            if number == EXPIRY:
                entry = CommandEntry(game, "expire", "expire", {})
            else:
                entry = CommandEntry(game, "timeout", f"timeout:{number}", {"number": int(number)})
            await self.bus.send(entry)
            # XX: only if it is still there (the command may have been handled already).
            if await self.client.zadd(key, {member: when + TIMER_RETRY}, xx=True, ch=True):
                self.metrics.timers.inc()
        return len(due)

    # --- one command ----------------------------------------------------------------------

    async def handle(self, delivery: Delivery) -> None:
        """Decide one entry, write its side effects, reply, and acknowledge it last, with the
        settles. Raises if anything failed (the entry stays pending: the consumer counts the
        failure, and the claim delivers it again); ``DeadLetter`` for a malformed entry."""
        started = time.perf_counter()
        stream, entry_id = delivery.stream, delivery.entry
        try:
            entry = CommandEntry.decode(delivery.fields)
            if entry.reply and not entry.reply.startswith(self.keys.replies("")):
                # The referee writes the answer to the key an entry names: only a reply stream.
                why = f"reply {entry.reply[:200]!r} is not a reply stream of this deployment"
                raise MalformedEntry(why)
        except MalformedEntry as err:
            self.log.warning("malformed command", stream=stream, entry=entry_id, why=str(err))
            self.metrics.commands.labels("malformed", "refused").inc()
            raise DeadLetter(f"malformed: {err}") from None
        lock = self._locks.setdefault(entry.game, asyncio.Lock())
        effects = Effects(self.client)
        try:
            async with lock:
                outcome = await self._execute(entry, effects)
        except Exception as err:
            err.add_note(f"game {entry.game}, {entry.kind} command")
            raise
        finally:
            if not lock.locked() and not lock._waiters:
                self._locks.pop(entry.game, None)
        if entry.kind == "timeout" and outcome.code != "timer_not_expired":
            # Applied, or stale (the turn is over), or a repeat: this deadline is done with.
            timers = self.keys.timers(partition_of(entry.game, self.settings.partitions))
            effects.settles.zrem(timers, f"{entry.game}|{entry.body.get('number')}")
        if entry.kind == "expire" and outcome.code != "timer_not_expired":
            timers = self.keys.timers(partition_of(entry.game, self.settings.partitions))
            effects.settles.zrem(timers, f"{entry.game}|{EXPIRY}")
        if entry.reply:
            answer = outcome.answer(entry.rid, entry.game).encode()
            effects.writes.xadd(entry.reply, answer, maxlen=REPLY_MAXLEN, approximate=True)
        delivery.ack(effects.settles)
        await effects.apply()  # the acknowledgement last, only once every write is in
        seconds = time.perf_counter() - started
        self.metrics.latency.observe(seconds)
        kind = _kind(entry)
        self.metrics.commands.labels(kind, outcome.status).inc()
        self.log.info(
            "command",
            game=entry.game,
            command=kind,
            seat=entry.seat,
            outcome=outcome.status,
            code=outcome.code,
            version=outcome.version,
            ms=round(seconds * 1000, 2),
        )

    async def execute(self, entry: CommandEntry) -> Outcome:
        """Decide and append, retrying on version conflicts; a known command id answers as it
        did the first time. Raises ``WritesRefused`` if a side effect could not be written."""
        effects = Effects(self.client)
        outcome = await self._execute(entry, effects)
        await effects.apply()
        return outcome

    async def _execute(self, entry: CommandEntry, effects: Effects) -> Outcome:
        """``execute`` with the side effects of an append queued on ``effects`` (sent after
        the append).

        A command id seen before is looked up only when the command is refused: on the way to
        an append the append script itself answers a repeated id with the original outcome, so
        the common case costs one round trip less."""
        for attempt in range(MAX_CONFLICTS):
            if attempt == 0:
                loaded = await self.games.load(entry.game)
            else:
                loaded, gone = await self._reload(entry.game)
                if gone:
                    return await self._refuse(entry, loaded, _archived(entry.game, loaded), effects)
            command = await self._command(entry, loaded)
            if isinstance(command, Rejection):
                if attempt == 0 and command.code == "stale_version":
                    continue  # the cache may lag a write by another process: look afresh
                return await self._refuse(entry, loaded, command, effects)
            now = self.clock()
            bot = bot_of_command_id(entry.cid) if entry.kind == "seat" else None
            ctx = Context(now, await self._seed(entry.game), bot=bot)
            decision = decide(loaded.state, command, ctx)
            if isinstance(decision, Rejection):
                if attempt == 0:
                    continue  # the cache may lag a write by another process: decide afresh
                if decision.code in ("timer_not_expired", "stale_timeout"):
                    # Fired early (a Redis clock that moved back): keep the deadline, it fires
                    # again. Or fired for a turn that is over: make sure the turn in play has
                    # its own (should a failure have kept it from being written).
                    self._timer(effects, entry.game, loaded)
                return await self._refuse(entry, loaded, decision, effects)
            actor = _actor(entry, bot)
            try:
                result, after = await self.games.append(
                    entry.game,
                    loaded,
                    decision,
                    actor,
                    entry.cid,
                    _fingerprint(entry),
                    now,
                    salt_key=ctx.seed,
                )
            except VersionConflict as conflict:
                self.metrics.conflicts.inc()
                if isinstance(conflict, HeadMismatch):
                    # Another history at this version (Redis's data replaced): nothing cached
                    # of the game holds, so it is read again from the start.
                    self.games.forget(entry.game)
                continue
            if result.duplicate:
                return await self._repeat(entry, result, effects)
            change = change_of(loaded, result)
            self._announce(effects, entry.game, after, decision, loaded, change, _moves(entry))
            return _outcome_of(decision, result)
        raise RuntimeError(f"game {entry.game}: {MAX_CONFLICTS} version conflicts in a row")

    async def _reload(self, game: str) -> tuple[Loaded, bool]:
        """The game read afresh, and checked against this referee's cache: versions only grow,
        so a log behind the cached state has lost what the referee saw (the archiver forgot
        the game, or Redis lost its data), and reading on from the cached state would find
        nothing new for ever. The cached state then goes and the log is read from its start;
        with no log left, the state last seen and True: the game takes no more commands. (The
        head is asked in the same round trip as the events.)"""
        seen = self.games.cached_version(game)
        loaded, (version, _) = await asyncio.gather(
            self.games.load(game, fresh=True), self.store.version(game)
        )
        if version >= seen:
            return loaded, False
        self.games.forget(game)
        if version == 0:
            self._seeds.pop(game, None)
            self.log.info("game left Redis", game=game, cached=seen)
            return loaded, True
        self.log.warning("game's log went back", game=game, cached=seen, version=version)
        return await self.games.load(game, fresh=True), False

    async def _refuse(
        self, entry: CommandEntry, loaded: Loaded, rejection: Rejection, effects: Effects
    ) -> Outcome:
        """A refusal, unless the command id was applied before: a retry gets its first answer
        (the state has moved on since, so deciding it again would refuse it wrongly)."""
        seen = await self.store.outcome(entry.game, entry.cid)
        if seen is not None:
            return await self._repeat(entry, seen, effects)
        if entry.kind == "create" and loaded.version == 0:
            # No game came of it: its seed (made before the rules were checked) goes too, at
            # once, under the game's lock: deferred past it, the deletion could take the seed a
            # create of the same id made next (and has committed to) from under it.
            await self.client.delete(self.keys.seed(entry.game))
            self._seeds.pop(entry.game, None)
        return Outcome("refused", loaded.version, loaded.head, rejection.code, rejection.message)

    async def _repeat(self, entry: CommandEntry, seen: AppendResult, effects: Effects) -> Outcome:
        """The original answer to a command id seen before (or a refusal if the id was reused
        for a different command), and every side effect of its append written again: the
        first handling may have appended and then failed to write them (Redis out of memory),
        and they are idempotent."""
        if seen.fingerprint is not None and seen.fingerprint != _fingerprint(entry):
            return Outcome(
                "refused",
                seen.last_version,
                seen.head,
                "command_id_reused",
                f"command id {entry.cid!r} was used before for a different command",
            )
        # The log up to the command's events: the state before it tells which turn it ended.
        stored = await self.store.read(entry.game, limit=seen.last_version)
        before = fold_stored(stored[: seen.first_version - 1])
        events = [event_from(s.type, s.data) for s in stored[seen.first_version - 1 :]]
        loaded = await self.games.load(entry.game, fresh=True)
        self._announce(effects, entry.game, loaded, events, before)
        outcome = _outcome_of(events, seen)
        return Outcome(**{**outcome.__dict__, "duplicate": True})

    async def _command(self, entry: CommandEntry, loaded: Loaded) -> Command | Rejection:
        body = entry.body
        try:
            if entry.kind == "create":
                seed = await self._new_seed(entry.game, body.get("seed"))
                return CreateGame(
                    entry.game,
                    body.get("rules", ""),
                    body.get("options") or {},
                    body.get("seats", 0),
                    commitment(seed),
                    str(body.get("rematch_of") or ""),
                    str(body.get("tournament") or ""),
                )
            if entry.kind == "sit":
                return sit_command(body)
            if entry.kind == "start":
                return Start()
            if entry.kind == "timeout":
                if _nobody_plays(loaded.state):  # a timer set before the last player left
                    return Rejection(
                        "nobody_playing",
                        "every seat still in the round is away and skipped: the turn waits "
                        "for a player's return or the game's expiry (Decision 25)",
                    )
                return Timeout(int(body["number"]), _timeout_reason(loaded.state))
            if entry.kind == "continue":
                return Continue()
            if entry.kind == "cancel":
                return Cancel()
            if entry.kind == "expire":
                return await self._expiry(entry.game, loaded.state)
            if entry.seat is None:
                return Rejection("bad_command", "a seat command needs a seat")
            expected = body.get("expected_version")
            if isinstance(expected, int) and expected != loaded.version:
                return Rejection(
                    "stale_version",
                    f"expected version {expected}, but the game is at version {loaded.version}",
                )
            kind = body.get("type")
            if kind in SERVICE_SEAT_COMMANDS and not entry.cid.startswith(SERVICE_COMMAND_PREFIX):
                # A rematch is linked by the gateway that made it, never by a seat's own client.
                return Rejection("bad_command", f"type {kind!r} is the service's to send")
            return seat_command(kind, entry.seat, body)
        except CommandError as err:
            return Rejection("bad_command", str(err))
        except (KeyError, TypeError, ValueError) as err:
            return Rejection("bad_command", f"malformed {entry.kind} command: {err}")

    async def _expiry(self, game: str, state: GameState) -> Command | Rejection:
        """An ``expire`` the timers fired, unless the game was moved in within its limit (the
        time of its last move is kept beside the timer): then the expiry is due a limit after
        that move, and fires again then (written at once: this is a timer's doing, rare, and
        no append follows)."""
        moved = await self.client.get(self.keys.game(game, MOVED))
        last = float(_text(moved)) if moved is not None else None
        limit = self._expiry_limit(state)
        if last is not None and self.clock() - last < limit:
            timers = self.keys.timers(partition_of(game, self.settings.partitions))
            await self.client.zadd(timers, {f"{game}|{EXPIRY}": last + limit}, xx=True)
            return Rejection("timer_not_expired", "the game has moved since its expiry was set")
        return Expire()

    def _expiry_limit(self, state: GameState) -> int:
        """Seconds without a move after which the game expires (Decision 18)."""
        if state.status in ("new", "waiting"):
            return self.settings.waiting_expiry_seconds
        return self.settings.playing_expiry_seconds

    async def _new_seed(self, game: str, fixed: object) -> bytes:
        """The game's secret seed: made once (or fixed by a seeded-games gateway) and kept in
        the game's own key, never in the log until it is revealed."""
        candidate = secrets.token_bytes(32)
        if isinstance(fixed, str) and fixed:
            candidate = bytes.fromhex(fixed)
        await self.client.set(self.keys.seed(game), candidate.hex(), nx=True)
        seed = await self._seed(game, fresh=True)
        assert seed is not None
        return seed

    async def _seed(self, game: str, fresh: bool = False) -> bytes | None:
        if not fresh and game in self._seeds:
            return self._seeds[game]
        raw = await self.client.get(self.keys.seed(game))
        if raw is None:
            return None
        seed = bytes.fromhex(_text(raw))
        self._seeds[game] = seed
        while len(self._seeds) > SEED_CACHE:
            self._seeds.popitem(last=False)
        return seed

    def _announce(
        self,
        effects: Effects,
        game: str,
        loaded: Loaded,
        events: list[Event],
        before: Loaded,
        change: Change | None = None,
        moved: bool = False,
    ) -> None:
        """Queue on ``effects`` what the append of ``events`` (taking the game from ``before``
        to ``loaded``, or on since) leaves to write: a note of each round it ended waiting for
        its score sheet (before the news, so scoring never sees the news without the note);
        the news for the feed (with what changed, when given); the current turn's
        deadline if it started a turn; and, once those are in, the removal of the deadline of
        the turn it ended. ``moved``: the append is a player's or a bot's doing (not a timer's):
        the game's expiry (Decision 18) starts again."""
        types = [e.TYPE for e in events]
        key, fields = self.bus.news(game, loaded.version, types, change=change)
        for ended_round in (e.round for e in events if isinstance(e, RoundEnded)):
            effects.writes.sadd(self.keys.awaiting_scores(), awaiting_member(game, ended_round))
        effects.writes.xadd(key, fields, maxlen=FEED_MAXLEN, approximate=True)
        if "MatchEnded" in types:  # final: what the lobby lists of it from now on
            summary = encode_summary(summary_of(game, loaded.state))
            effects.writes.set(summary_key(self.keys, game), summary, ex=SUMMARY_SECONDS)
        back = {e.seat for e in events if isinstance(e, SeatReturned)}
        turn = loaded.state.turn
        on_turn_again = turn is not None and turn.seat in back
        if "TurnStarted" in types or on_turn_again:
            # (A player back on its turn gets the turn's whole time again, not a skip's.)
            self._timer(effects, game, loaded, again=on_turn_again)
        elif back and _timeout_reason(loaded.state) == "skipped":
            # Someone plays again: the skipped turn a game nobody played waited on ends now.
            self._timer(effects, game, loaded, again=True)
        timers = self.keys.timers(partition_of(game, self.settings.partitions))
        ended = before.state.turn
        now = loaded.state.turn
        over = ended is not None and (now is None or now.number != ended.number)
        if over and ended is not None:
            effects.settles.zrem(timers, f"{game}|{ended.number}")
        status = loaded.state.status
        if status in ("finished", "cancelled"):
            effects.settles.zrem(timers, f"{game}|{EXPIRY}")
        elif moved or "GameStarted" in types:
            at = self.clock()
            limit = self._expiry_limit(loaded.state)
            # (Kept twice the limit: gone, the game has been idle past it anyway.)
            effects.writes.set(self.keys.game(game, MOVED), repr(at), ex=2 * limit)
            if before.version == 0 or "GameStarted" in types:
                # The limit starts (a waiting game's, a game under way's). A later move only
                # notes its time: the expiry, when it fires, finds it and moves itself on
                # (``_expiry``), so a turn costs no write of the timers.
                effects.writes.zadd(timers, {f"{game}|{EXPIRY}": at + limit})

    def _timer(self, effects: Effects, game: str, loaded: Loaded, again: bool = False) -> None:
        """Queue the current turn's deadline: its timer's (again: the same member and score);
        an untimed turn's absence limit, ``absent_seconds`` from now; at once for the seat of a
        player away under ``skip`` (Decision 17). Those two are set only if not set already, so
        that writing the side effects again does not put them off (``again``: set anyway). None
        while nobody plays (Decision 25): the turn waits for a return or the game's expiry."""
        state = loaded.state
        turn = state.turn
        if state.phase != "turns" or turn is None or _nobody_plays(state):
            return
        timers = self.keys.timers(partition_of(game, self.settings.partitions))
        member = f"{game}|{turn.number}"
        if _timeout_reason(state) == "skipped":
            effects.writes.zadd(timers, {member: self.clock()})
        elif turn.deadline is not None:
            effects.writes.zadd(timers, {member: turn.deadline})
        else:
            due = self.clock() + state.rules.absent_seconds
            effects.writes.zadd(timers, {member: due}, nx=not again)

    async def _tell_sender(self, delivery: Delivery, reason: str, writes: CommandGroup) -> None:
        """With a dead letter: a sender waiting for the answer of a well-formed command learns
        that it failed (rather than waiting for its timeout)."""
        sender = _sender(delivery.fields, self.keys.replies(""))
        if sender is None:
            return
        reply, rid, game = sender
        try:
            version, head = await self.store.version(game)
        except Exception:
            version, head = 0, ""
        message = f"the referee could not handle the command ({reason[:200]})"
        answer = Answer(rid, game, "refused", version, head, "command_failed", message)
        writes.xadd(reply, answer.encode(), maxlen=REPLY_MAXLEN, approximate=True)

    async def update_stream_gauges(self) -> None:
        """Pending and lag per partition, for /metrics."""
        for partition in range(self.settings.partitions):
            stream = self.keys.command_stream(partition)
            for group in await self.client.xinfo_groups(stream):
                if _text(group["name"]) == REFEREES:
                    self.metrics.pending.labels(str(partition)).set(group["pending"])
                    self.metrics.lag.labels(str(partition)).set(group.get("lag") or 0)

    async def ready(self) -> tuple[bool, str]:
        """Ready when the loops run (not draining) and the last lease heartbeat, recent
        enough, reached Redis: the last known state, no Redis call of its own."""
        if self.stopping.is_set():
            return False, "draining"
        if not self.running:
            return False, "not consuming"
        return self.readiness.answer("consuming")


def _outcome_of(events: list[Event], result: AppendResult) -> Outcome:
    seat = next((e.seat for e in events if isinstance(e, PlayerSeated)), None)
    rejected = next((e for e in events if isinstance(e, CommandRejected)), None)
    if rejected is not None:
        return Outcome("rejected", result.last_version, result.head, rejected.code, rejected.reason)
    return Outcome("accepted", result.last_version, result.head, seat=seat)


def _archived(game: str, seen: Loaded) -> Rejection:
    """The refusal of a command for a game whose log has left Redis since it was seen."""
    return Rejection(
        "game_archived",
        f"game {game} has left Redis after version {seen.version} (archived once over, or "
        "lost with Redis's data): it takes no more commands",
    )


def _nobody_plays(state: GameState) -> bool:
    """Whether every seat still in the round is a player away under ``skip`` (no player and no
    bot would ever move): ending their turns at once would play the game to an end, and a
    result, that nobody played (Decision 25)."""
    seats = state.playing_seats()
    return bool(seats) and all(s < len(state.away) and state.away[s] == "skip" for s in seats)


def _timeout_reason(state: GameState) -> str:
    """Why the current turn's time is up when its timer fires (Decision 17): its deadline; an
    untimed turn's absence limit; a skipped seat's turn, at once."""
    turn = state.turn
    if turn is None:
        return "deadline"
    if turn.seat < len(state.away) and state.away[turn.seat] == "skip":
        return "skipped"
    return "deadline" if turn.deadline is not None else "absent"


def _moves(entry: CommandEntry) -> bool:
    """Whether a command is someone's doing (a player's, a bot's, the host's), which puts the
    game's expiry off, rather than a timer's or the scoring role's."""
    return entry.kind in ("create", "sit", "start", "seat", "cancel")


def _actor(entry: CommandEntry, bot: str | None) -> str:
    """Who the events are recorded as made by: ``bot:<name>`` for a bot's move (its command id
    says so, and the engine has checked that the bot plays the seat), ``seat:<n>`` for a
    player's, else the kind of command (``create``, ``sit``, ``timeout``, ...)."""
    if bot is not None:
        return f"bot:{bot}"
    return f"seat:{entry.seat}" if entry.seat is not None else entry.kind


def _fingerprint(entry: CommandEntry) -> str:
    body = {k: v for k, v in entry.body.items() if k != "expected_version"}
    return fingerprint({"kind": entry.kind, "seat": entry.seat, "body": body})


def _kind(entry: CommandEntry) -> str:
    """The command's kind as logs and metrics name it: a seat command by its type (a made-up
    type is "invalid", so that input cannot invent metric labels)."""
    if entry.kind != "seat":
        return entry.kind
    kind = entry.body.get("type")
    return kind if isinstance(kind, str) and kind in SEAT_COMMANDS else "invalid"


def _sender(fields: dict[Any, Any], replies: str) -> tuple[str, str, str] | None:
    """Reply stream, request id and game of an entry that is a command, else None."""
    try:
        entry = CommandEntry.decode(fields)
    except Exception:  # a malformed entry has no sender to tell
        return None
    if not entry.reply.startswith(replies) or not entry.rid:
        return None
    return entry.reply, entry.rid, entry.game


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
