"""At-least-once reading of Redis streams in a consumer group: the one loop the referee, scoring
and any later follower of a stream (bots, an archiver) share, so that every one of them keeps
the same promises.

- Reading: ``XREADGROUP``, first this consumer's own history (what it read before a restart and
  did not acknowledge), then new entries; on a Redis Cluster one read per slot
  (``bus.read_plan``).
- Handling: ``handler(delivery)``, at most ``concurrency`` at once. When the handler returns the
  entry is acknowledged: by the consumer, or by the handler itself with ``delivery.ack(pipe)``
  on the pipeline of its last writes, so the acknowledgement goes only once they are in. When
  it raises, the entry stays pending and is delivered again. An entry ``wants`` declines is
  acknowledged unhandled (a follower's news of nothing it keeps).
- Claiming: every ``claim_idle_ms / 2`` the entries idle longer than ``claim_idle_ms`` (a dead or
  stuck consumer's, or this one's own failed ones) are claimed (``XAUTOCLAIM``) and handled.
- The delivery rule: Redis counts an entry's deliveries (each read of it by the group and each
  claim). An entry is handled on at most ``max_deliveries`` deliveries; the delivery that would
  be its ``max_deliveries + 1``-th is not handled: the entry is dead-lettered. A poison entry that
  kills its process every time is given up all the same, since the count is checked before the
  handling and kept by Redis.
- Transient failures: a delivery that failed for Redis's reasons (out of memory, unreachable:
  ``shared/infra/transient.py``) is taken back from the count, so an entry is never
  dead-lettered for them.
- Dead letters: the entry's record (stream, id, reason, size, the entry's first
  ``DEAD_LETTER_ENTRY_BYTES``) is added to the dead-letter stream (trimmed to about
  ``DEAD_LETTER_MAXLEN``), with whatever ``on_dead_letter`` adds (say, an answer to a waiting
  sender), and only then acknowledged. A consumer without a dead-letter stream gives the entry
  up: acknowledged, logged and counted. A handler that finds an entry can never be handled
  (malformed) raises ``DeadLetter(reason)``: it is dead-lettered at once.
- A lost group: a Redis that comes back without its data (a volume lost, a restore, a flush)
  has no consumer groups, and every read and claim would be refused with ``NOGROUP`` for ever
  while the process looked healthy. The consumer creates the group again (at the stream's
  start, so that whatever was written since is delivered) and reads on.
- Drain: ``drain`` stops reading and claiming, lets the handlers in flight finish within
  ``drain_seconds`` and cancels those that did not (their entries stay pending: delivered again).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, replace
from typing import Any

import structlog
from prometheus_client import Counter

from shared.infra import jsontext
from shared.infra.bus import read_plan, stream_batches
from shared.infra.client import CommandGroup, RedisClient
from shared.infra.protocol import FIELD
from shared.infra.settings import Settings
from shared.infra.transient import forgive, refused, transient

DEAD_LETTER_MAXLEN = 100_000  # the dead-letter stream is trimmed to about this many entries
DEAD_LETTER_ENTRY_BYTES = 16 * 1024  # a dead-letter record keeps at most this much of an entry
DEAD_LETTER_REASON_BYTES = 1000
FAILED_TOO_OFTEN = "failed too many times"
RETRY_SECONDS = 0.5  # after a failed read
GROUP_RETRY_SECONDS = 1.0  # between tries to create the groups while Redis is away


def lost_group(err: BaseException) -> bool:
    """Whether Redis refused a group command because the group (or its stream) is gone."""
    return "NOGROUP" in str(err)


class DeadLetter(Exception):
    """Raised by a handler for an entry that can never be handled (malformed): it goes to the
    dead letters at once, with ``reason``, instead of being delivered again."""


class Delivery:
    """One delivery of a stream entry to this consumer."""

    __slots__ = ("acked", "deliveries", "entry_id", "fields", "group", "stream")

    def __init__(
        self, stream: str, group: str, entry_id: Any, fields: dict[Any, Any], deliveries: int
    ) -> None:
        self.stream = stream
        self.group = group
        self.entry_id = entry_id
        self.fields = fields
        self.deliveries = deliveries  # Redis's count, this delivery included
        self.acked = False  # the handler queued the acknowledgement itself

    def ack(self, pipe: CommandGroup) -> None:
        """Queue the acknowledgement on ``pipe`` (sent with the handler's last writes); the
        consumer then sends none of its own."""
        pipe.xack(self.stream, self.group, self.entry_id)
        self.acked = True

    @property
    def entry(self) -> str:
        """The entry's id as text (for logs)."""
        return _text(self.entry_id)


Handler = Callable[[Delivery], Awaitable[None]]
DeadLetterHook = Callable[[Delivery, str, CommandGroup], Awaitable[None]]


@dataclass(frozen=True)
class Reading:
    """What a consumer reads and how fast: the group, its name in it, the streams and the
    pace. ``from_settings`` takes the deployment's (``RUMMY_*``)."""

    group: str
    consumer: str
    streams: tuple[str, ...]
    dead_letters: str | None  # the dead-letter stream; None: entries are given up
    batch: int = 64  # entries read (and claimed) at once
    block_ms: int = 1000  # how long a read waits for new entries
    # On a Redis Cluster each stream is read alone (a read's keys must share a slot): how long
    # such a read waits (None: ``block_ms``). A one-stream read need not wake to take in a
    # stream that became readable (that stream's own loop does), so it can wait longer: with
    # dozens of partitions the reads of an idle cluster are otherwise most of its cost.
    alone_block_ms: int | None = None
    claim_idle_ms: int = 5000  # a pending entry idle this long is claimed
    max_deliveries: int = 5
    drain_seconds: float = 10.0
    concurrency: int = 1  # handlers at once (1: in order, one after another)
    gather_seconds: float = 0.0  # after a read of less than a batch, wait for more to gather
    idle_seconds: float = 0.25  # with no stream readable, look again after this

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        group: str,
        streams: Collection[str],
        dead_letters: str | None,
        **pace: Any,
    ) -> Reading:
        """The deployment's pace (``batch``, ``claim_idle_ms``, ``max_deliveries``,
        ``drain_seconds``, the consumer's name) with ``pace`` on top."""
        made = cls(
            group,
            settings.consumer_name(),
            tuple(streams),
            dead_letters,
            batch=settings.batch,
            claim_idle_ms=settings.claim_idle_ms,
            max_deliveries=settings.max_deliveries,
            drain_seconds=settings.drain_seconds,
        )
        return replace(made, **pace)


@dataclass(frozen=True)
class ConsumerMetrics:
    """The owner's counters the consumer counts in (the owner's names stay the metrics')."""

    failures: Counter  # deliveries whose handling raised
    dead_letters: Counter  # entries dead-lettered (or given up)
    claimed: Counter | None = None  # entries claimed from idle consumers
    handled: Counter | None = None  # entries acknowledged after handling (or declined)
    read_failures: Counter | None = None  # reads that failed (Redis away)
    by_reason: bool = True  # ``dead_letters`` has a ``reason`` label (the reason's first words)


class StreamConsumer:
    """One consumer of a group on some streams (see the module's docstring for its rules)."""

    def __init__(
        self,
        client: RedisClient,
        reading: Reading,
        handler: Handler,
        metrics: ConsumerMetrics,
        *,
        readable: Callable[[str], bool] | None = None,
        wants: Callable[[Delivery], bool] | None = None,
        on_dead_letter: DeadLetterHook | None = None,
        log: Any = None,
    ) -> None:
        """``readable``: whether to read new entries of a stream now (a referee reads only the
        partitions it leases; every stream is claimed from all the same). ``wants``: whether
        to handle an entry at all. ``on_dead_letter(delivery, reason, pipe)``: queue more
        writes with an entry's dead-letter record."""
        self.client = client
        self.reading = reading
        self.handler = handler
        self.metrics = metrics
        self.readable = readable
        self.wants = wants
        self.on_dead_letter = on_dead_letter
        self.log = log or structlog.get_logger("consumer").bind(consumer=reading.consumer)
        self.inflight: set[asyncio.Task[None]] = set()
        self._loops: list[asyncio.Task[None]] = []
        self._block_ms = reading.block_ms  # the plan's (see ``Reading.alone_block_ms``)
        # The loops also stop on this flag: on Python 3.11 a cancellation that meets a Redis
        # reply just as it arrives can be lost, and a loop that missed it would read on.
        self._draining = False

    # --- the loops ------------------------------------------------------------------------

    async def join(self, stopping: asyncio.Event) -> bool:
        """Create the group on every stream (idempotent), trying again while Redis is away
        (it may come up after the service); False if ``stopping`` came first."""
        while not stopping.is_set():
            try:
                for stream in self.reading.streams:
                    await self._create_group(stream)
                return True
            except asyncio.CancelledError:
                raise
            except Exception as err:
                self.log.warning("creating the consumer groups failed; retrying", error=str(err))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), GROUP_RETRY_SECONDS)
        return False

    async def _create_group(self, stream: str) -> None:
        try:
            await self.client.xgroup_create(stream, self.reading.group, id="0", mkstream=True)
        except Exception as err:  # BUSYGROUP: it exists already
            if "BUSYGROUP" not in str(err):
                raise

    def start(self) -> None:
        """Start reading and claiming (in tasks of their own) until ``drain``."""
        plan = read_plan(self.client, list(self.reading.streams))
        self._draining = False
        block = self.reading.block_ms
        if len(plan) > 1 and self.reading.alone_block_ms is not None:
            block = self.reading.alone_block_ms
        self._block_ms = block
        self._loops = [
            asyncio.create_task(self._read_loop(streams), name=f"read-{i}")
            for i, streams in enumerate(plan)
        ]
        self._loops.append(asyncio.create_task(self._claim_loop(), name="claim"))

    async def drain(self) -> int:
        """Stop reading and claiming; let the handlers in flight finish within
        ``drain_seconds``, then cancel the rest. Returns how many were cancelled."""
        self._draining = True
        for task in self._loops:
            task.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        self._loops = []
        if self.inflight:
            await asyncio.wait(set(self.inflight), timeout=self.reading.drain_seconds)
        unfinished = [task for task in self.inflight if not task.done()]
        for task in unfinished:
            task.cancel()
        await asyncio.gather(*unfinished, return_exceptions=True)
        return len(unfinished)

    async def run(self, stopping: asyncio.Event) -> None:
        """Join, read and claim until ``stopping`` is set; then drain."""
        if not await self.join(stopping):
            return
        self.start()
        try:
            await stopping.wait()
        finally:
            await self.drain()

    async def _read_loop(self, streams: list[str]) -> None:
        starts = dict.fromkeys(streams, "0")  # this consumer's own history first
        while not self._draining:
            mine = [s for s in streams if self.readable is None or self.readable(s)]
            if not mine:
                await asyncio.sleep(self.reading.idle_seconds)
                continue
            try:
                total = await self.read(mine, starts)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                if self.metrics.read_failures is not None:
                    self.metrics.read_failures.inc()
                if lost_group(err) and await self._found_again(mine):
                    continue
                self.log.warning("reading the streams failed; retrying", error=str(err))
                await asyncio.sleep(RETRY_SECONDS)
                continue
            if 0 < total < self.reading.batch and self.reading.gather_seconds > 0:
                await asyncio.sleep(self.reading.gather_seconds)

    async def read(self, streams: list[str], starts: dict[str, str]) -> int:
        """One read of ``streams`` from ``starts`` (``"0"``: this consumer's history, moved on
        past what it returned, and to ``">"``, new entries, once it is read); the entries are
        handed to handlers. Returns how many came."""
        reply = await self.client.xreadgroup(
            self.reading.group,
            self.reading.consumer,
            {stream: starts[stream] for stream in streams},
            count=self.reading.batch,
            block=self._block_ms,
        )
        got = {_text(stream): entries or [] for stream, entries in stream_batches(reply)}
        total = 0
        for stream in streams:
            entries = got.get(stream, [])
            total += len(entries)
            history = starts[stream] != ">"
            if history:
                starts[stream] = _text(entries[-1][0]) if entries else ">"
            await self._dispatch(stream, entries, fresh=not history)
        return total

    async def _claim_loop(self) -> None:
        interval = max(self.reading.claim_idle_ms / 2000, 0.05)
        while not self._draining:
            await asyncio.sleep(interval)
            for stream in self.reading.streams:
                try:
                    await self.claim(stream)
                except asyncio.CancelledError:
                    raise
                except Exception as err:
                    if lost_group(err) and await self._found_again([stream]):
                        continue
                    self.log.warning("claiming failed", stream=stream, error=str(err))

    async def _found_again(self, streams: list[str]) -> bool:
        """Create the group again on ``streams`` after Redis said it has none (it lost its
        data); False if that failed too (Redis away again: the caller retries as usual)."""
        try:
            for stream in streams:
                await self._create_group(stream)
        except asyncio.CancelledError:
            raise
        except Exception:
            return False
        self.log.warning(
            "the consumer group was gone (Redis lost its data?); created again",
            group=self.reading.group,
            streams=streams,
        )
        return True

    async def claim(self, stream: str) -> int:
        """Claim the entries of ``stream`` idle longer than ``claim_idle_ms`` and hand them to
        handlers (or to the dead letters, past ``max_deliveries``); entries deleted meanwhile
        (trimmed) are acknowledged. Returns how many were claimed."""
        reply = await self.client.xautoclaim(
            stream,
            self.reading.group,
            self.reading.consumer,
            min_idle_time=self.reading.claim_idle_ms,
            start_id="0-0",
            count=self.reading.batch,
        )
        deleted = list(reply[2]) if len(reply) > 2 else []
        if deleted:
            await self.client.xack(stream, self.reading.group, *deleted)
        claimed = [(entry_id, fields) for entry_id, fields in reply[1] if fields]
        if not claimed:
            return 0
        if self.metrics.claimed is not None:
            self.metrics.claimed.inc(len(claimed))
        await self._dispatch(stream, claimed, fresh=False)
        return len(claimed)

    # --- one entry ------------------------------------------------------------------------

    async def _dispatch(self, stream: str, entries: list[Any], fresh: bool) -> None:
        """Hand entries to handlers, in order. ``fresh``: read as new (delivered once); else
        their delivery counts are looked up, for the delivery rule."""
        gone = [entry_id for entry_id, fields in entries if not fields]  # deleted (trimmed)
        live = [(entry_id, fields) for entry_id, fields in entries if fields]
        counts = {} if fresh or not live else await self._deliveries(stream, live)
        declined = list(gone)
        declined_live = 0
        for entry_id, fields in live:
            if self._draining:
                break  # unacknowledged: delivered again (here after a restart, or to a peer)
            delivery = Delivery(
                stream, self.reading.group, entry_id, fields, counts.get(_text(entry_id), 1)
            )
            if self.wants is not None and not self.wants(delivery):
                declined.append(entry_id)
                declined_live += 1
            elif delivery.deliveries > self.reading.max_deliveries:
                await self._give_up(delivery)
            else:
                await self._spawn(delivery)
        if declined:
            await self.client.xack(stream, self.reading.group, *declined)
            if declined_live and self.metrics.handled is not None:
                self.metrics.handled.inc(declined_live)

    async def _deliveries(self, stream: str, entries: list[Any]) -> dict[str, int]:
        """How many times each of ``entries`` (pending for this consumer) was delivered."""
        pending = await self.client.xpending_range(
            stream,
            self.reading.group,
            min=entries[0][0],
            max=entries[-1][0],
            count=len(entries),
            consumername=self.reading.consumer,
        )
        return {_text(p["message_id"]): int(p["times_delivered"]) for p in pending}

    async def _give_up(self, delivery: Delivery) -> None:
        """Dead-letter an entry past the delivery limit; should that fail, it stays pending
        (and is dead-lettered at a later claim)."""
        try:
            await self.dead_letter(delivery, FAILED_TOO_OFTEN)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self.log.warning(
                "dead-lettering failed",
                stream=delivery.stream,
                entry=delivery.entry,
                error=str(err),
            )

    async def _spawn(self, delivery: Delivery) -> None:
        while len(self.inflight) >= self.reading.concurrency:
            await asyncio.wait(set(self.inflight), return_when=asyncio.FIRST_COMPLETED)
        task = asyncio.create_task(self.handle(delivery))
        self.inflight.add(task)
        task.add_done_callback(self.inflight.discard)

    async def handle(self, delivery: Delivery) -> None:
        """Handle one delivery and acknowledge it; on a failure leave it pending (counted, or
        taken back from the count if Redis was the reason). Never raises."""
        try:
            try:
                await self.handler(delivery)
            except DeadLetter as poison:
                await self.dead_letter(delivery, str(poison))
                return
            if not delivery.acked:
                await self.client.xack(delivery.stream, self.reading.group, delivery.entry_id)
            if self.metrics.handled is not None:
                self.metrics.handled.inc()
        except asyncio.CancelledError:
            raise
        except Exception as err:
            await self._failed(delivery, err)

    async def _failed(self, delivery: Delivery, err: Exception) -> None:
        """Count and log a failed delivery; one that failed for Redis's reasons is taken back
        from the entry's delivery count."""
        self.metrics.failures.inc()
        where = {"stream": delivery.stream, "entry": delivery.entry}
        if not transient(err):
            self.log.exception("handling an entry failed", error=str(err), **where)
            return
        self.log.warning(
            "handling an entry failed for Redis's reasons; it is handled again",
            error=str(err),
            **where,
        )
        try:
            await forgive(
                self.client,
                delivery.stream,
                self.reading.group,
                self.reading.consumer,
                delivery.entry_id,
            )
        except asyncio.CancelledError:
            raise
        except Exception as again:
            self.log.warning(
                "the failed delivery could not be taken back", error=str(again), **where
            )

    async def dead_letter(self, delivery: Delivery, reason: str) -> None:
        """Record the entry in the dead-letter stream (with ``reason`` and what
        ``on_dead_letter`` adds), then acknowledge it. The acknowledgement goes only once the
        writes are in: raises ``WritesRefused`` and leaves the entry pending otherwise."""
        writes = self.client.pipeline(transaction=False)
        if self.reading.dead_letters is not None:
            writes.xadd(
                self.reading.dead_letters,
                dead_letter_record(delivery, reason),
                maxlen=DEAD_LETTER_MAXLEN,
                approximate=True,
            )
        if self.on_dead_letter is not None:
            await self.on_dead_letter(delivery, reason, writes)
        refused("dead letter", await writes.execute(raise_on_error=False))
        if self.metrics.by_reason:
            self.metrics.dead_letters.labels(reason.split(":")[0]).inc()
        else:
            self.metrics.dead_letters.inc()
        self.log.warning(
            "dead letter" if self.reading.dead_letters is not None else "entry given up",
            stream=delivery.stream,
            entry=delivery.entry,
            deliveries=delivery.deliveries,
            reason=reason[:200],
        )
        await self.client.xack(delivery.stream, self.reading.group, delivery.entry_id)


def dead_letter_record(delivery: Delivery, reason: str) -> dict[bytes, bytes]:
    """The dead-letter stream's record of an entry: its stream and id, why, its size and its
    message (field ``c``; without one, the names of its fields), cut to a bounded size."""
    fields = delivery.fields
    raw = fields.get(FIELD, fields.get(FIELD.decode()))
    if raw is None:
        names = sorted(_text(name)[:100] for name in fields)[:20]
        raw = jsontext.dumps_bytes({"fields": names})
    entry = raw if isinstance(raw, bytes) else str(raw).encode()
    entry_id = delivery.entry_id
    return {
        b"stream": delivery.stream.encode(),
        b"id": entry_id if isinstance(entry_id, bytes) else str(entry_id).encode(),
        b"reason": reason.encode()[:DEAD_LETTER_REASON_BYTES],
        b"size": str(len(entry)).encode(),
        b"entry": entry[:DEAD_LETTER_ENTRY_BYTES],
    }


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
