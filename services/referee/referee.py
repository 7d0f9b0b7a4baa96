"""The referee: reads commands from the partitioned command streams, decides with the engine,
appends the events, and only then acknowledges.

- Several referees share one consumer group; concurrent commands for one game resolve through
  the expected version (reload and decide again on a conflict; never a double apply).
- A retried command id returns the original outcome (looked up before deciding).
- A command is acknowledged last, only once every side effect of it is written (the news, the
  awaiting-scores note, the turn's deadline, the answer): Redis out of memory refuses those
  writes but not the ``XACK``, and a command nobody sends again (a timeout, scoring's
  ``continue``) acknowledged without them would leave a turn without its timer or a round
  unscored. Unacknowledged, it is claimed again; the append answers its command id as a
  repeat, and the repeat writes every side effect again.
- A crashed peer's pending commands are claimed after ``claim_idle_ms``; an entry delivered
  ``max_deliveries`` times without success goes to the dead-letter stream. A delivery that failed
  for Redis's reasons (out of memory, unreachable) is not counted (``shared/infra/transient.py``).
- Time is Redis's (``shared/infra/clock.py``), never the host's: decisions' ``now``, the turn
  deadlines and their firing agree whichever referee handles them.
- Turn deadlines live in Redis (sorted sets per partition), so a timer survives a restart; the
  ``timeout:<turn>`` command id makes it fire once even if two referees race for it.
- Every append is announced on the feed, which gateways and the scoring service follow.
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

from shared.core.codes import Rejection
from shared.core.commands import (
    SEAT_COMMANDS,
    Command,
    CommandError,
    Context,
    Continue,
    CreateGame,
    Start,
    Timeout,
    seat_command,
    sit_command,
)
from shared.core.decide import decide
from shared.core.events import CommandRejected, Event, PlayerSeated, RoundEnded, event_from
from shared.core.shuffle import commitment
from shared.infra import jsontext
from shared.infra.autopipe import autopipe
from shared.infra.bus import (
    FEED_MAXLEN,
    REFEREES,
    REPLY_MAXLEN,
    Bus,
    CommandEntry,
    MalformedEntry,
    fingerprint,
    partition_of,
    read_plan,
    stream_batches,
)
from shared.infra.client import RedisClient
from shared.infra.clock import RedisClock
from shared.infra.gamelog import GameLog, Loaded, fold_stored
from shared.infra.keys import Keys, awaiting_member
from shared.infra.leases import PartitionLeases
from shared.infra.observability import service_registry
from shared.infra.settings import Settings
from shared.infra.store.base import AppendResult, VersionConflict
from shared.infra.store.redis import RedisEventStore
from shared.infra.transient import forgive, refused, transient

MAX_CONFLICTS = 10
TIMER_RETRY = 5.0  # seconds after which a fired deadline fires again if nothing handled it
SEED_CACHE = 10_000
DEAD_LETTER_ENTRY_BYTES = 16 * 1024  # the dead-letter record keeps at most this much of an entry


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

    def to_json(self, rid: str, game: str) -> dict[str, Any]:
        return {"rid": rid, "game": game, **self.__dict__}


class Effects:
    """What handling one command leaves to write, in two steps. ``writes``: what Redis may
    refuse (out of memory refuses every write that adds data): the news, the awaiting-scores
    note, the turn's deadline, the answer. ``settles``: removals (an ended turn's deadline, a
    fired timer, a failed create's seed) and the acknowledgement, sent only once every write is
    in, so that an entry whose side effects are not all written stays pending and is handled
    again (and a timer it would remove still fires)."""

    def __init__(self, client: Any) -> None:
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
    ) -> None:
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
            self.client, self.keys, self.consumer, settings.partitions, settings.lease_ms
        )
        self.held: set[str] = set()  # the command streams of the partitions leased to us
        self.log = structlog.get_logger("referee").bind(consumer=self.consumer)
        self.stopping = asyncio.Event()
        self.running = False
        self._locks: dict[str, asyncio.Lock] = {}
        self._seeds: OrderedDict[str, bytes] = OrderedDict()
        self._inflight: set[asyncio.Task[None]] = set()

    # --- the loops ------------------------------------------------------------------------

    async def run(self) -> None:
        """Consume, claim and fire timers until ``stop``; then drain within the deadline."""
        while True:  # Redis may come up after the referee (a restart, a fresh deployment)
            try:
                await self.bus.ensure_groups(REFEREES, self.bus.command_streams())
                break
            except Exception as err:
                self.log.warning("creating the consumer groups failed; retrying", error=str(err))
                try:
                    await asyncio.wait_for(self.stopping.wait(), 1.0)
                    return
                except TimeoutError:
                    continue
        self.running = True
        try:
            await self.clock.sync()
        except Exception as err:
            self.log.warning(
                "reading Redis's time failed; the host's time until it answers", error=str(err)
            )
        await self._refresh_leases()
        loops = [
            asyncio.create_task(self._consume(streams), name=f"consume-{i}")
            for i, streams in enumerate(read_plan(self.client, self.bus.command_streams()))
        ]
        loops.append(asyncio.create_task(self._lease_loop(), name="leases"))
        loops.append(asyncio.create_task(self._claim_loop(), name="claim"))
        loops.append(asyncio.create_task(self._timer_loop(), name="timers"))
        loops.append(asyncio.create_task(self.clock.follow(self.stopping), name="clock"))
        try:
            await self.stopping.wait()
        finally:
            self.running = False
            for task in loops:
                task.cancel()
            await asyncio.gather(*loops, return_exceptions=True)
            if self._inflight:
                await asyncio.wait(self._inflight, timeout=self.settings.drain_seconds)
            try:  # peers take the partitions over at once instead of after the lease runs out
                await asyncio.wait_for(self.leases.give_up(), 2.0)
            except Exception as err:
                self.log.warning("giving up the leases failed", error=str(err))
            self.log.info("referee stopped", unfinished=sum(not t.done() for t in self._inflight))

    async def _refresh_leases(self) -> None:
        try:
            held = await self.leases.refresh()
        except asyncio.CancelledError:
            raise
        except Exception as err:  # Redis away: keep reading what we held (peers may too)
            self.log.warning("renewing the partition leases failed", error=str(err))
            held = set(self.leases.held)  # less any lease a renewal found lost
        streams = {self.keys.command_stream(p) for p in held}
        if streams != self.held:
            self.log.info("partitions held", partitions=sorted(held))
        self.held = streams

    async def _lease_loop(self) -> None:
        while not self.stopping.is_set():
            await asyncio.sleep(self.settings.lease_ms / 3000)
            await self._refresh_leases()

    def stop(self) -> None:
        """Stop reading new commands (in-flight ones finish, within the drain deadline)."""
        self.stopping.set()

    async def _consume(self, streams: list[str]) -> None:
        """Read new commands from those of ``streams`` whose partition this referee holds."""
        while not self.stopping.is_set():
            # Back-pressure: read no more than a few batches ahead of what is being handled, so
            # that one busy referee does not hoard entries its peers could take.
            while len(self._inflight) >= self.settings.batch * 4:
                await asyncio.wait(set(self._inflight), return_when=asyncio.FIRST_COMPLETED)
            mine = [stream for stream in streams if stream in self.held]
            if not mine:
                await asyncio.sleep(min(0.25, self.settings.lease_ms / 3000))
                continue
            try:
                # Short blocks: a partition handed over is read within a quarter second.
                reply = await self.client.xreadgroup(
                    REFEREES,
                    self.consumer,
                    dict.fromkeys(mine, ">"),
                    count=self.settings.batch,
                    block=250,
                )
            except asyncio.CancelledError:
                raise
            except Exception as err:
                self.log.warning("reading commands failed; retrying", error=str(err))
                await asyncio.sleep(0.5)
                continue
            for stream, entries in stream_batches(reply):
                name = _text(stream)
                self._spawn([(name, entry_id, fields) for entry_id, fields in entries])

    def _spawn(self, entries: list[tuple[str, bytes, dict[Any, Any]]]) -> None:
        for stream, entry_id, fields in entries:
            task = asyncio.create_task(self.handle(stream, entry_id, fields))
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)

    async def _claim_loop(self) -> None:
        interval = max(self.settings.claim_idle_ms / 2000, 0.05)
        while not self.stopping.is_set():
            await asyncio.sleep(interval)
            for partition in range(self.settings.partitions):
                try:
                    await self.claim(partition)
                except asyncio.CancelledError:
                    raise
                except Exception as err:
                    self.log.warning("claiming failed", partition=partition, error=str(err))

    async def claim(self, partition: int) -> int:
        """Take over entries idle longer than ``claim_idle_ms`` (a crashed or stuck peer's);
        dead-letter those delivered ``max_deliveries`` times. Returns how many were claimed."""
        stream = self.keys.command_stream(partition)
        reply = await self.client.xautoclaim(
            stream,
            REFEREES,
            self.consumer,
            min_idle_time=self.settings.claim_idle_ms,
            start_id="0-0",
            count=self.settings.batch,
        )
        claimed = [(entry_id, fields) for entry_id, fields in reply[1] if fields]
        for deleted in reply[2] if len(reply) > 2 else []:
            await self.client.xack(stream, REFEREES, deleted)
        if not claimed:
            return 0
        self.metrics.claimed.inc(len(claimed))
        deliveries = {
            _text(p["message_id"]): int(p["times_delivered"])
            for p in await self.client.xpending_range(
                stream, REFEREES, min=claimed[0][0], max=claimed[-1][0], count=len(claimed) * 2
            )
        }
        retry = []
        for entry_id, fields in claimed:
            if deliveries.get(_text(entry_id), 0) > self.settings.max_deliveries:
                try:
                    await self.dead_letter(stream, entry_id, fields, "failed too many times")
                except asyncio.CancelledError:
                    raise
                except Exception as err:  # still pending: dead-lettered at a later claim
                    self.log.warning(
                        "dead-lettering failed",
                        stream=stream,
                        entry=_text(entry_id),
                        error=str(err),
                    )
            else:
                retry.append((stream, entry_id, fields))
        self._spawn(retry)
        return len(claimed)

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
            await self.bus.send(
                CommandEntry(game, "timeout", f"timeout:{number}", {"number": int(number)})
            )
            # XX: only if it is still there (the command may have been handled already).
            if await self.client.zadd(key, {member: when + TIMER_RETRY}, xx=True, ch=True):
                self.metrics.timers.inc()
        return len(due)

    # --- one command ----------------------------------------------------------------------

    async def handle(self, stream: str, entry_id: bytes, fields: dict[Any, Any]) -> None:
        """Decide one entry, write its side effects, reply, acknowledge; leave it pending if
        anything failed (the claim retries it, and dead-letters it after ``max_deliveries``
        deliveries that failed for reasons of its own). Never raises."""
        try:
            await self._handle(stream, entry_id, fields)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            await self._failed(stream, entry_id, err)

    async def _failed(self, stream: str, entry_id: bytes, err: Exception, **about: Any) -> None:
        """Count and log a failed delivery; one that failed for Redis's reasons is taken back
        from the entry's delivery count, so that it is never dead-lettered for them."""
        self.metrics.failures.inc()
        where = {"stream": stream, "entry": _text(entry_id), **about}
        if not transient(err):
            self.log.exception("handling an entry failed", error=str(err), **where)
            return
        self.log.warning(
            "handling an entry failed for Redis's reasons; it is handled again",
            error=str(err),
            **where,
        )
        try:
            await forgive(self.client, stream, REFEREES, self.consumer, entry_id)
        except asyncio.CancelledError:
            raise
        except Exception as again:
            self.log.warning(
                "the failed delivery could not be taken back", error=str(again), **where
            )

    async def _handle(self, stream: str, entry_id: bytes, fields: dict[Any, Any]) -> None:
        started = time.perf_counter()
        try:
            entry = CommandEntry.decode(fields)
        except MalformedEntry as err:
            self.log.warning(
                "malformed command", stream=stream, entry=_text(entry_id), why=str(err)
            )
            await self.dead_letter(stream, entry_id, fields, f"malformed: {err}")
            self.metrics.commands.labels("malformed", "refused").inc()
            return
        if entry.reply and not entry.reply.startswith(self.keys.replies("")):
            # The referee writes the answer to the key an entry names: only a reply stream.
            why = f"reply {entry.reply[:200]!r} is not a reply stream of this deployment"
            self.log.warning("malformed command", stream=stream, entry=_text(entry_id), why=why)
            await self.dead_letter(stream, entry_id, fields, f"malformed: {why}")
            self.metrics.commands.labels("malformed", "refused").inc()
            return
        lock = self._locks.setdefault(entry.game, asyncio.Lock())
        effects = Effects(self.client)
        try:
            async with lock:
                outcome = await self._execute(entry, effects)
        except Exception as err:
            await self._failed(stream, entry_id, err, game=entry.game, kind=entry.kind)
            return
        finally:
            if not lock.locked() and not lock._waiters:
                self._locks.pop(entry.game, None)
        if entry.kind == "timeout" and outcome.code != "timer_not_expired":
            # Applied, or stale (the turn is over), or a repeat: this deadline is done with.
            timers = self.keys.timers(partition_of(entry.game, self.settings.partitions))
            effects.settles.zrem(timers, f"{entry.game}|{entry.body.get('number')}")
        if entry.reply:
            reply = outcome.to_json(entry.rid, entry.game)
            effects.writes.xadd(
                entry.reply, {b"c": _json(reply)}, maxlen=REPLY_MAXLEN, approximate=True
            )
        effects.settles.xack(stream, REFEREES, entry_id)
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
            loaded = await self.games.load(entry.game, fresh=attempt > 0)
            command = await self._command(entry, loaded)
            if isinstance(command, Rejection):
                if attempt == 0 and command.code == "stale_version":
                    continue  # the cache may lag a write by another process: look afresh
                return await self._refuse(entry, loaded, command, effects)
            now = self.clock()
            ctx = Context(now, await self._seed(entry.game))
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
            actor = f"seat:{entry.seat}" if entry.seat is not None else entry.kind
            try:
                result, after = await self.games.append(
                    entry.game, loaded, decision, actor, entry.cid, _fingerprint(entry), now
                )
            except VersionConflict:
                self.metrics.conflicts.inc()
                continue
            if result.duplicate:
                return await self._repeat(entry, result, effects)
            self._announce(effects, entry.game, after, decision, loaded, result.records)
            return _outcome_of(decision, result)
        raise RuntimeError(f"game {entry.game}: {MAX_CONFLICTS} version conflicts in a row")

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
                )
            if entry.kind == "sit":
                return sit_command(body)
            if entry.kind == "start":
                return Start()
            if entry.kind == "timeout":
                return Timeout(int(body["number"]))
            if entry.kind == "continue":
                return Continue()
            if entry.seat is None:
                return Rejection("bad_command", "a seat command needs a seat")
            expected = body.get("expected_version")
            if isinstance(expected, int) and expected != loaded.version:
                return Rejection(
                    "stale_version",
                    f"expected version {expected}, but the game is at version {loaded.version}",
                )
            return seat_command(body.get("type"), entry.seat, body)
        except CommandError as err:
            return Rejection("bad_command", str(err))
        except (KeyError, TypeError, ValueError) as err:
            return Rejection("bad_command", f"malformed {entry.kind} command: {err}")

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
        records: tuple[bytes, ...] = (),
    ) -> None:
        """Queue on ``effects`` what the append of ``events`` (taking the game from ``before``
        to ``loaded``, or on since) leaves to write: a note of each round it ended waiting for
        its score sheet (before the news, so scoring never sees the news without the note);
        the news for the feed (with the new events' ``records`` when given); the current turn's
        deadline if it started a turn; and, once those are in, the removal of the deadline of
        the turn it ended."""
        types = [e.TYPE for e in events]
        key, fields = self.bus.news(game, loaded.version, types, records)
        for ended_round in (e.round for e in events if isinstance(e, RoundEnded)):
            effects.writes.sadd(self.keys.awaiting_scores(), awaiting_member(game, ended_round))
        effects.writes.xadd(key, fields, maxlen=FEED_MAXLEN, approximate=True)
        if "TurnStarted" in types:
            self._timer(effects, game, loaded)
        ended = before.state.turn
        now = loaded.state.turn
        over = ended is not None and (now is None or now.number != ended.number)
        if over and ended is not None and ended.deadline is not None:
            timers = self.keys.timers(partition_of(game, self.settings.partitions))
            effects.settles.zrem(timers, f"{game}|{ended.number}")

    def _timer(self, effects: Effects, game: str, loaded: Loaded) -> None:
        """Queue the current turn's deadline (again: the same member and score)."""
        turn = loaded.state.turn
        if loaded.state.phase == "turns" and turn is not None and turn.deadline is not None:
            timers = self.keys.timers(partition_of(game, self.settings.partitions))
            effects.writes.zadd(timers, {f"{game}|{turn.number}": turn.deadline})

    async def dead_letter(
        self, stream: str, entry_id: bytes, fields: dict[Any, Any], reason: str
    ) -> None:
        """Move an entry to the dead-letter stream (with why) and acknowledge it; a sender
        waiting for the answer of a well-formed command learns that it failed. The
        acknowledgement goes only once the record (and the answer) are written: raises
        ``WritesRefused`` and leaves the entry pending otherwise."""
        raw = fields.get(b"c", fields.get("c"))
        if raw is None:
            names = sorted(_text(name)[:100] for name in fields)[:20]
            raw = _json({"fields": names})
        entry = raw if isinstance(raw, bytes) else str(raw).encode()
        record = {
            b"stream": stream.encode(),
            b"id": entry_id if isinstance(entry_id, bytes) else str(entry_id).encode(),
            b"reason": reason.encode()[:1000],
            b"size": str(len(entry)).encode(),
            b"entry": entry[:DEAD_LETTER_ENTRY_BYTES],
        }
        effects = Effects(self.client)
        pipe = effects.writes
        pipe.xadd(self.keys.dead_letters(), record, maxlen=FEED_MAXLEN, approximate=True)
        effects.settles.xack(stream, REFEREES, entry_id)
        sender = _sender(fields, self.keys.replies(""))
        if sender is not None:
            reply, rid, game = sender
            try:
                version, head = await self.store.version(game)
            except Exception:
                version, head = 0, ""
            answer = {
                "rid": rid,
                "game": game,
                "status": "refused",
                "version": version,
                "head": head,
                "code": "command_failed",
                "message": f"the referee could not handle the command ({reason[:200]})",
                "seat": None,
                "duplicate": False,
            }
            pipe.xadd(reply, {b"c": _json(answer)}, maxlen=REPLY_MAXLEN, approximate=True)
        await effects.write()
        self.metrics.dead_letters.labels(reason.split(":")[0]).inc()
        self.log.warning("dead letter", stream=stream, entry=_text(entry_id), reason=reason)
        await effects.settle()

    async def update_stream_gauges(self) -> None:
        """Pending and lag per partition, for /metrics."""
        for partition in range(self.settings.partitions):
            stream = self.keys.command_stream(partition)
            for group in await self.client.xinfo_groups(stream):
                if _text(group["name"]) == REFEREES:
                    self.metrics.pending.labels(str(partition)).set(group["pending"])
                    self.metrics.lag.labels(str(partition)).set(group.get("lag") or 0)

    async def ready(self) -> tuple[bool, str]:
        """Ready when Redis answers and the loops run."""
        if not self.running:
            return False, "not consuming"
        try:
            await self.client.ping()
            await self.update_stream_gauges()
        except Exception as err:
            return False, f"redis: {err}"
        return True, "consuming"


def _outcome_of(events: list[Event], result: AppendResult) -> Outcome:
    seat = next((e.seat for e in events if isinstance(e, PlayerSeated)), None)
    rejected = next((e for e in events if isinstance(e, CommandRejected)), None)
    if rejected is not None:
        return Outcome("rejected", result.last_version, result.head, rejected.code, rejected.reason)
    return Outcome("accepted", result.last_version, result.head, seat=seat)


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


def _json(doc: dict[str, Any]) -> bytes:
    return jsontext.dumps_bytes(doc)
