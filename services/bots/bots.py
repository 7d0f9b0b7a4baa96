"""The bots service: plays every seat a bot holds, as a client of the streams like any player.

- It follows the feed (the per-partition news streams the gateways and scoring follow) in a
  consumer group of its own, ``bots``, and loads each game's state from the game's log (the news'
  events folded onto the cached state, else the store). It never reaches into a referee: a move
  is an ordinary command entry on the game's command stream, which the referees decide as they
  decide a person's.
- A move's command id is ``bot:<bot>:<turn>:<version>`` (the bot named as the sender, which
  the referee records as the event's actor) and it carries ``expected_version``: the
  position it was worked out for names it, so a redelivered news entry, a second process or a
  restarted one working out the same move send the same command (the referee answers a repeated
  id with its first outcome), and a move for a position that has moved on is refused as stale.
  Its random choices are seeded by the same position, so the same move comes out everywhere. A
  move that had to fall back on a cheaper bot (``thinking.py``) ends ``:quick``: another
  command for the same position, of which the expected version still lets one apply.
- Pacing: a move is due ``RUMMY_BOT_DELAY_SECONDS`` after the news that made it the bot's
  (Redis's time). The due moves are kept in Redis (``bots:moves:<partition>``, game -> when)
  before the news is acknowledged, and in this process as a timer per game: a wait never holds
  a reader or another game, and a move survives a crash (the partition's next holder finds it).
  Once sent, a move is due again ``RETRY_SECONDS`` later, should its command be lost; the news
  of the move makes the next one due (or removes the game once no bot is to move).
- Sharing: the processes lease the partitions as the referees do (``shared/infra/leases.py``,
  keys of their own), and only a partition's holder moves its games; every process follows the
  feed partitions it holds and claims what a dead peer left pending.
- Readiness is last known (the lease heartbeats' outcome and the draining flag); the first live
  process by name forgets the departed ones' consumers in the feed groups.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import structlog
from prometheus_client import Counter, Gauge, Histogram

from services.bots.thinking import Thinker
from shared.core.botnames import BOT_COMMAND_PREFIX
from shared.core.state import GameState
from shared.core.views import seat_view
from shared.infra.autopipe import autopipe
from shared.infra.bus import Bus, partition_of
from shared.infra.client import RedisClient
from shared.infra.clock import RedisClock
from shared.infra.consumer import ConsumerMetrics, DeadLetter, Delivery, Reading, StreamConsumer
from shared.infra.departed import Departed
from shared.infra.gamelog import GameLog, Loaded
from shared.infra.keys import Keys
from shared.infra.leases import PartitionLeases
from shared.infra.observability import service_registry
from shared.infra.protocol import CommandEntry, MalformedEntry, News
from shared.infra.readiness import Readiness
from shared.infra.settings import Settings
from shared.infra.store.redis import RedisEventStore

BOT_PLAYERS = "bots"  # the consumer group on the feed
RETRY_SECONDS = 5.0  # a move sent that no news has answered is worked out and sent again
SWEEP_SECONDS = 0.5  # between two looks at the held partitions' due moves
SWEEP_BATCH = 200  # due moves taken per partition per look
TIDY_EVERY = 20  # lease refreshes between two looks for departed consumers
KNOWN = 100_000  # games remembered as having no bot seat (their turns' news is declined)

# News of nothing but these cannot give a bot a seat: declined for a game known to have none.
TURN_NEWS = frozenset(
    {
        "GameStarted",
        "StarterChosen",
        "RoundDealt",
        "TurnStarted",
        "TurnPlayed",
        "CardDrawn",
        "CardDiscarded",
        "StockReshuffled",
        "CommandRejected",
        "TurnPassed",
        "TurnTimedOut",
        "TurnForfeited",
        "RoundEnded",
        "ScoresRecorded",
        "MatchEnded",
        "SeedRevealed",
    }
)


def bot_to_move(state: GameState) -> tuple[int, str] | None:
    """The seat whose turn it is and the bot playing it, when a bot plays it now."""
    turn = state.turn
    if state.status != "playing" or state.phase != "turns" or turn is None:
        return None
    bot = state.bot_at(turn.seat)
    return None if bot is None else (turn.seat, bot)


def move_id(bot: str, turn: int, version: int, quick: bool = False) -> str:
    """The command id of a bot's move for one position: ``bot:<bot>:`` names the bot as the
    sender (the referee records it as the actor), the turn and version name the position."""
    return f"{BOT_COMMAND_PREFIX}{bot}:{turn}:{version}" + (":quick" if quick else "")


class BotsMetrics:
    """The bots service's Prometheus metrics, on a registry of its own."""

    def __init__(self) -> None:
        self.registry = service_registry()
        self.moves = Counter(
            "bots_moves_total",
            "Bot moves sent, by bot and command type",
            ["bot", "type"],
            registry=self.registry,
        )
        self.news = Counter(
            "bots_feed_entries_total", "Feed entries handled or declined", registry=self.registry
        )
        self.failures = Counter(
            "bots_failures_total",
            "Feed entries or moves whose handling raised",
            registry=self.registry,
        )
        self.given_up = Counter(
            "bots_given_up_total",
            "Feed entries acknowledged unhandled (malformed, or past max_deliveries)",
            registry=self.registry,
        )
        self.claimed = Counter(
            "bots_claimed_total",
            "Pending feed entries claimed from idle consumers",
            registry=self.registry,
        )
        self.due = Gauge(
            "bots_moves_due",
            "Bot moves waiting for their time in this process",
            registry=self.registry,
        )
        self.late = Histogram(
            "bots_move_late_seconds",
            "How long after its due time a move was sent (working it out included)",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=self.registry,
        )
        self.partitions = Gauge(
            "bots_partitions_held",
            "Partitions whose bot seats this process plays",
            registry=self.registry,
        )


class Bots:
    """One ``rummy bots`` process's work (run several to share the seats)."""

    def __init__(
        self,
        client: RedisClient,
        settings: Settings,
        clock: Callable[[], float] = time.monotonic,
        *,
        lease_time: Callable[[], float] | None = None,
        readiness: Readiness | None = None,
    ) -> None:
        """``clock``: the host clock carrying Redis's time (tests give one they move);
        ``lease_time``: the time the leases are kept in (tests step it; None: Redis's own);
        ``readiness``: where the lease loop notes its outcomes."""
        self.client = autopipe(client)
        self.settings = settings
        self.clock = RedisClock(self.client, clock)
        self.delay = settings.bot_delay_seconds
        self.keys = Keys(settings.prefix)
        self.store = RedisEventStore(self.client, settings.prefix)
        self.games = GameLog(self.store, settings.cache_size)
        self.bus = Bus(self.client, self.keys, settings.partitions)
        self.consumer = settings.consumer_name()
        self.metrics = BotsMetrics()
        self.thinker = Thinker(settings, self.metrics.registry)
        self.leases = PartitionLeases(
            self.client,
            self.keys,
            self.consumer,
            settings.partitions,
            settings.lease_ms,
            lease_time,
            lease=self.keys.bot_lease,
            members=self.keys.bot_players(),
        )
        self.refresh_seconds = settings.lease_ms / 3000
        self.readiness = readiness or Readiness(max(1.0, 2 * self.refresh_seconds))
        self.departed = Departed(self.client, BOT_PLAYERS)
        self.held: set[int] = set()  # the partitions leased to this process
        self.held_feeds: set[str] = set()  # their feed streams (the reader asks this very set)
        self.log = structlog.get_logger("bots").bind(consumer=self.consumer)
        self.stopping = asyncio.Event()
        self.running = False
        self._refreshes = 0
        self._wakes: dict[str, asyncio.TimerHandle] = {}  # a due move's timer, per game
        self._due: dict[str, float] = {}  # when the game's move was made due, by this process
        self._moves: set[asyncio.Task[None]] = set()
        self._locks: dict[str, asyncio.Lock] = {}
        self._sent: dict[str, tuple[int, float]] = {}  # game -> (version, when) of the last move
        self._botless: OrderedDict[str, None] = OrderedDict()  # games seen without a bot seat
        reading = Reading.from_settings(
            settings,
            BOT_PLAYERS,
            self.bus.feed_streams(),
            None,  # no dead letters: a news entry given up leaves its move to the due set
            consumer=self.consumer,
            block_ms=250,
            concurrency=settings.batch * 4,
            idle_seconds=min(0.25, self.refresh_seconds),
        )
        counts = ConsumerMetrics(
            self.metrics.failures,
            self.metrics.given_up,
            handled=self.metrics.news,
            read_failures=self.metrics.failures,
            claimed=self.metrics.claimed,
            by_reason=False,
        )
        self.reader = StreamConsumer(
            self.client,
            reading,
            self.handle,
            counts,
            readable=self.held_feeds.__contains__,
            wants=self._wants,
            log=self.log,
        )

    # --- the loops ------------------------------------------------------------------------

    async def run(self) -> None:
        """Follow the feed, keep the leases and make the due moves until ``stop``; then drain
        (the moves being worked out finish within the drain deadline)."""
        if not await self.reader.join(self.stopping):
            return
        self.running = True
        try:
            await self.clock.sync()
        except Exception as err:
            self.log.warning(
                "reading Redis's time failed; the host's time until it answers", error=str(err)
            )
        await self.thinker.start()
        await self._refresh_leases()
        self.reader.start()
        loops = [
            asyncio.create_task(self._lease_loop(), name="leases"),
            asyncio.create_task(self._sweep_loop(), name="sweep"),
            asyncio.create_task(self.clock.follow(self.stopping), name="clock"),
        ]
        try:
            await self.stopping.wait()
        finally:
            self.running = False
            for task in loops:
                task.cancel()
            await asyncio.gather(*loops, return_exceptions=True)
            for wake in self._wakes.values():
                wake.cancel()
            self._wakes.clear()
            unfinished = await self.reader.drain()
            if self._moves:
                await asyncio.wait(set(self._moves), timeout=self.settings.drain_seconds)
            for task in list(self._moves):
                task.cancel()
            await asyncio.gather(*self._moves, return_exceptions=True)
            await self.thinker.stop()
            try:  # peers take the partitions over at once instead of after the lease runs out
                await asyncio.wait_for(self.leases.give_up(), 2.0)
            except Exception as err:
                self.log.warning("giving up the leases failed", error=str(err))
            self.metrics.due.set(0)
            self.log.info("bots stopped", unfinished=unfinished)

    def stop(self) -> None:
        """Stop following the feed and making moves (those in hand finish)."""
        self.stopping.set()

    async def _refresh_leases(self) -> None:
        try:
            held = await self.leases.refresh()
        except asyncio.CancelledError:
            raise
        except Exception as err:  # Redis away: keep playing what we held (peers may too)
            self.log.warning("renewing the partition leases failed", error=str(err))
            self.readiness.failed(f"redis: {err}")
            held = set(self.leases.held)
        else:
            self.readiness.reached()
        if held != self.held:
            self.log.info("partitions held", partitions=sorted(held))
        self.held.clear()
        self.held.update(held)
        self.held_feeds.clear()
        self.held_feeds.update(self.keys.feed(p) for p in held)
        self.metrics.partitions.set(len(held))

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
        """On the first live bots process by name: delete the departed ones' consumers from
        the feed groups once nothing is pending for them (``stream consumer``)."""
        alive = self.leases.still_here()
        if alive is None:
            return []
        gone = await self.departed.forget(self.bus.feed_streams(), alive)
        if gone:
            self.log.info("departed consumers forgotten", consumers=gone[:20], count=len(gone))
        return gone

    async def _sweep_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                self.metrics.failures.inc()
                self.log.warning("looking for due moves failed", error=str(err))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), SWEEP_SECONDS)

    async def sweep(self, now: float | None = None) -> int:
        """Start every move due by ``now`` (Redis's time by default) in the partitions this
        process holds: those a crashed peer left, and those sent whose news never came.
        Returns how many were started."""
        when = self.clock() if now is None else now
        started = 0
        for partition in sorted(self.held):
            key = self.keys.bot_moves(partition)
            due = await self.client.zrangebyscore(key, "-inf", when, start=0, num=SWEEP_BATCH)
            for member in due:
                self._start_move(_text(member))  # now, in place of its timer if it has one
                started += 1
        return started

    # --- the feed -------------------------------------------------------------------------

    def _wants(self, delivery: Delivery) -> bool:
        """Whether a news entry may concern a bot seat: not for a game known to have none
        whose news is only of turns (every game's turns are news; most have no bot)."""
        try:
            news = News.decode(delivery.fields)
        except MalformedEntry:
            return True  # handled: given up with a log line
        if news.game in self._botless and set(news.types) <= TURN_NEWS:
            self._botless.move_to_end(news.game)
            return False
        return True

    async def handle(self, delivery: Delivery) -> None:
        """A news entry: look at its game (the entry is acknowledged once this returns, so a
        move it makes due is in the due set by then)."""
        try:
            news = News.decode(delivery.fields)
        except MalformedEntry as err:
            self.log.warning("feed entry malformed", entry=delivery.entry, why=str(err)[:200])
            raise DeadLetter(f"malformed: {err}") from None
        await self.look(news.game, news)

    async def look(self, game: str, news: News | None = None) -> GameState:
        """Bring the game's state up to date (what the news says changed, else the store) and
        make its bot's move due, or forget it when no bot is to move. Returns the state."""
        loaded = await self._load(game, news)
        state = loaded.state
        if not any(state.bots):
            self._remember_botless(game)
        else:
            self._botless.pop(game, None)
        key = self.keys.bot_moves(partition_of(game, self.settings.partitions))
        if bot_to_move(state) is None:
            if any(state.bots) or game in self._sent:
                await self.client.zrem(key, game)
            self._forget(game)
            return state
        due = self.clock() + self.delay
        await self.client.zadd(key, {game: due})
        self._schedule(game, due)
        return state

    async def _load(self, game: str, news: News | None) -> Loaded:
        if news is not None and self.games.cached(game):
            try:
                if self.games.take_news(news):
                    return await self.games.load(game)
            except Exception as err:  # a record we cannot read: the store has it anyway
                self.log.warning("news unreadable", game=game, error=str(err))
        return await self.games.load(game, fresh=True)

    def _remember_botless(self, game: str) -> None:
        self._botless[game] = None
        self._botless.move_to_end(game)
        while len(self._botless) > KNOWN:
            self._botless.popitem(last=False)

    def _forget(self, game: str) -> None:
        self._sent.pop(game, None)
        self._due.pop(game, None)
        wake = self._wakes.pop(game, None)
        if wake is not None:
            wake.cancel()
        self.metrics.due.set(len(self._wakes))

    # --- moves ----------------------------------------------------------------------------

    def _schedule(self, game: str, due: float) -> None:
        """A timer that starts the game's move at ``due`` (Redis's time), in place of any
        earlier one: the wait holds nothing."""
        wake = self._wakes.pop(game, None)
        if wake is not None:
            wake.cancel()
        if self.stopping.is_set():
            return
        self._due[game] = due
        delay = max(0.0, due - self.clock())
        loop = asyncio.get_running_loop()
        self._wakes[game] = loop.call_later(delay, self._start_move, game, False)
        self.metrics.due.set(len(self._wakes))

    def _start_move(self, game: str, fresh: bool = True) -> None:
        """Start the game's move in a task of its own; ``fresh``: read the log first rather
        than trust the state the news brought (the sweep's moves: retries, or a dead peer's)."""
        wake = self._wakes.pop(game, None)
        if wake is not None:
            wake.cancel()
        self.metrics.due.set(len(self._wakes))
        if self.stopping.is_set():
            return
        task = asyncio.create_task(self._move_logged(game, fresh), name=f"move-{game}")
        self._moves.add(task)
        task.add_done_callback(self._moves.discard)

    async def _move_logged(self, game: str, fresh: bool) -> None:
        try:
            await self.move(game, fresh)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # the due set keeps the move: the sweep tries it again
            self.metrics.failures.inc()
            self.log.warning("a bot move failed", game=game, error=str(err))

    async def move(self, game: str, fresh: bool = True) -> CommandEntry | None:
        """Work out and send the move of the bot whose turn it is in ``game``, if this process
        holds the game's partition; the command sent, or None. ``fresh=False``: from the state
        the news left in the cache when there is one (a state that has moved on since makes a
        stale move, which the referee refuses: its news makes the next one due)."""
        partition = partition_of(game, self.settings.partitions)
        if partition not in self.held:
            return None  # the holder's sweep finds it in the due set
        lock = self._locks.setdefault(game, asyncio.Lock())
        try:
            async with lock:
                return await self._move(game, partition, fresh or not self.games.cached(game))
        finally:
            if not lock.locked() and not lock._waiters:
                self._locks.pop(game, None)

    async def _move(self, game: str, partition: int, fresh: bool) -> CommandEntry | None:
        key = self.keys.bot_moves(partition)
        loaded = await self.games.load(game, fresh=fresh)
        state = loaded.state
        mover = bot_to_move(state)
        if mover is None or state.turn is None:
            await self.client.zrem(key, game)
            self._forget(game)
            return None
        sent = self._sent.get(game)
        if (
            sent is not None
            and sent[0] == loaded.version
            and self.clock() - sent[1] < RETRY_SECONDS
        ):
            return None  # sent for this very position: its news is on the way
        seat, bot = mover
        view = seat_view(state, seat)
        body, quick = await self.thinker.choose(bot, view, f"{game}:{loaded.version}:{seat}")
        cid = move_id(bot, state.turn.number, loaded.version, quick)
        entry = CommandEntry(
            game,
            "seat",
            cid,
            {**body, "expected_version": loaded.version},
            seat=seat,
            at=self.clock(),
        )
        # Due again should the command be lost; the news of the move makes the next one due.
        writes = self.client.pipeline(transaction=False)  # one round trip, in this order
        writes.zadd(key, {game: self.clock() + RETRY_SECONDS})
        writes.xadd(self.bus.command_stream(game), entry.encode())
        await writes.execute()
        self._sent[game] = (loaded.version, self.clock())
        due = self._due.pop(game, None)
        if due is not None:
            self.metrics.late.observe(max(0.0, self._sent[game][1] - due))
        self.metrics.moves.labels(bot, str(body.get("type"))).inc()
        self.log.info(
            "bot move",
            game=game,
            seat=seat,
            bot=bot,
            command=body.get("type"),
            version=loaded.version,
            quick=quick,
        )
        return entry

    async def ready(self) -> tuple[bool, str]:
        """Ready when the loops run (not draining) and the last lease heartbeat, recent
        enough, reached Redis: the last known state, no Redis call of its own."""
        if self.stopping.is_set():
            return False, "draining"
        if not self.running:
            return False, "not following the feed"
        return self.readiness.answer("playing")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
