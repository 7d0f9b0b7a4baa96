"""The tournament service: decides tournament commands and runs the tournaments' rounds.

- Commands: it reads the tournament command stream in the consumer group ``tournaments``,
  decides each command with the core (``shared.tournament.decide``) on the tournament's folded
  log, appends the events with the expected version and the command id (the store answers a
  repeated id with its first outcome, so a redelivered entry applies nothing twice) and
  answers the sender on its reply stream, as the referee answers a game's command.
- Rounds: every step of a round is derived from the log, so the same step is found again after
  a crash. A paired table is seated and started through ordinary commands to the referees
  (create, one sit per seat, start) whose command ids are derived from the table's game id
  (itself derived from the tournament, round and table) and the step: re-sent after a
  restart, the referee answers them with their first outcome. Then the table's
  ``TableStarted``; once its game ended (``MatchEnded``, or ``GameCancelled`` by its own
  timers), its ``TableFinished`` read from the game's log, wherever it is (Redis, or the
  archive once archived; only its seatings and its end are decoded); once the round is over,
  the next pairing or the finish. The service's own commands carry ids of the step
  (``service:pair:<round>``, ...), so doing a step twice appends it once.
- Finding the work: it follows the feed in a group of its own (``tournaments``) for the ends
  of games that are tables' games (``Keys.tournament_tables``, which a tournament's games
  leave just before its finish is appended; the first sweep forgets any left of tournaments
  over), and sweeps every running tournament at start and every ``sweep_seconds`` for any
  step not yet done.
- A finished tournament the archiver has let go from Redis (``docs/archive.md``) takes no more
  commands: with an archive, a command for a tournament with no log in Redis but a record in
  the archive is refused, nothing appended.
- Several processes may run: the appends' expected versions and the command ids keep their
  work from being done twice. Each heartbeats among the ``tournaments:members``; the first
  live one by name forgets the departed ones' consumers in its groups (every start is a new
  consumer, ``shared/infra/departed.py``). Ready while its loops run and its last heartbeat
  reached Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import structlog
from prometheus_client import Counter

from shared.archive.base import Archive
from shared.core.events import GameCancelled, MatchEnded, PlayerSeated, SeatLeft
from shared.core.events import event_from as game_event
from shared.infra import codec
from shared.infra.bus import Bus, Requester
from shared.infra.client import RedisClient
from shared.infra.consumer import ConsumerMetrics, DeadLetter, Delivery, Reading, StreamConsumer
from shared.infra.departed import Departed
from shared.infra.keys import Keys
from shared.infra.members import Members
from shared.infra.observability import service_registry
from shared.infra.protocol import Answer, CommandEntry, MalformedEntry, News
from shared.infra.readiness import PING_SECONDS, Readiness
from shared.infra.settings import Settings
from shared.infra.store.base import VersionConflict, genesis_head
from shared.infra.store.redis import RedisEventStore
from shared.infra.stored import StoredEvent
from shared.infra.tournaments import (
    TournamentIndex,
    TournamentLog,
    check_tournament_id,
    command_fingerprint,
    summary,
)
from shared.tournament.commands import (
    KINDS,
    SERVICE,
    Command,
    FinishTable,
    FinishTournament,
    PairRound,
    StartTable,
    TournamentError,
    command_from,
    command_parts,
)
from shared.tournament.decide import decide, next_command
from shared.tournament.events import BOT
from shared.tournament.state import Table, Tournament
from shared.tournament.tables import seated_players, table_result

OPEN_STATUSES = ("created", "registering", "running")  # a tournament not over
GROUP = "tournaments"  # the consumer group, on the command stream and on the feed
ENDS = frozenset({MatchEnded.TYPE, GameCancelled.TYPE})
# A table's game's events its result reads: who sat where (``seated_players``) and its end.
TABLE_TYPES = ENDS | {PlayerSeated.TYPE, SeatLeft.TYPE}
REFEREE_TIMEOUT = 10.0
ATTEMPTS = 8  # appends tried against a log others append to at once
MAX_STEPS = 10_000  # steps one advance takes at most (a tournament's whole run is far fewer)
REPLY_LEN = 10_000
TIDY_EVERY = 20  # heartbeats between two looks for departed consumers
MAP_PAGE = 500  # game -> table entries read or forgotten at a time


def step_id(command: Command) -> str:
    """The command id of one of the service's own steps: the step names it, so a step done
    again (a restart, a second process) is the same command."""
    match command:
        case PairRound(number):
            return f"{SERVICE}:pair:{number}"
        case StartTable(number, table, _):
            return f"{SERVICE}:started:{number}:{table}"
        case FinishTable(number, table):
            return f"{SERVICE}:finished:{number}:{table}"
        case FinishTournament():
            return f"{SERVICE}:finish"
    raise TypeError(f"not a step of the service: {command!r}")


def table_command_id(step: str) -> str:
    """The command id of a step of a table's game (``create``, ``sit:<seat>``, ``start``): the
    game's id already names the tournament, round and table."""
    return f"service:tournament:{step}"


class TournamentMetrics:
    """The tournament service's Prometheus metrics, on a registry of its own."""

    def __init__(self) -> None:
        self.registry = service_registry()
        self.commands = Counter(
            "tournaments_commands_total",
            "Tournament commands decided, by kind and answer",
            ["kind", "status"],
            registry=self.registry,
        )
        self.steps = Counter(
            "tournaments_steps_total",
            "The service's own steps appended (pair, started, finished, finish)",
            ["step"],
            registry=self.registry,
        )
        self.game_commands = Counter(
            "tournaments_game_commands_total",
            "Commands sent to the referees to seat and start tables, by kind",
            ["kind"],
            registry=self.registry,
        )
        self.feed = Counter(
            "tournaments_feed_entries_total",
            "Feed entries handled or declined",
            registry=self.registry,
        )
        self.failures = Counter(
            "tournaments_failures_total",
            "Entries or steps whose handling raised (tried again)",
            registry=self.registry,
        )
        self.dead_letters = Counter(
            "tournaments_dead_letters_total",
            "Entries given up (malformed, or past max_deliveries)",
            registry=self.registry,
        )
        self.sweeps = Counter(
            "tournaments_sweeps_total", "Sweeps of the running tournaments", registry=self.registry
        )


class TournamentService:
    """One ``rummy tournaments`` process's work."""

    def __init__(
        self,
        client: RedisClient,
        settings: Settings,
        archive: Archive | None = None,
        sweep_seconds: float | None = None,
        member_time: Callable[[], float] | None = None,
    ) -> None:
        """``archive``: where finished games are read from once Redis let them go;
        ``sweep_seconds``: between two sweeps (None: ``RUMMY_TOURNAMENT_SWEEP_SECONDS``);
        ``member_time``: the time of the heartbeats (tests step it; None: Redis's own)."""
        self.client = client
        self.settings = settings
        self.keys = Keys(settings.prefix)
        self.log = TournamentLog(client, self.keys)
        self.index = TournamentIndex(client, self.keys)
        self.games = RedisEventStore(client, settings.prefix)
        # Started tables' games in play: how much of each log ``finished_table`` has read.
        self._in_play: dict[str, int] = {}
        self._swept = False  # whether a sweep has looked at every tournament not over
        self._tidied = False  # whether the game -> table map was tidied (once a process)
        self.archive = archive
        self.bus = Bus(client, self.keys, settings.partitions)
        self.consumer = settings.consumer_name()
        self.referees = Requester(self.bus, f"tournaments-{self.consumer}")
        self.sweep_seconds = (
            settings.tournament_sweep_seconds if sweep_seconds is None else sweep_seconds
        )
        self.metrics = TournamentMetrics()
        self.log_ = structlog.get_logger("tournaments").bind(consumer=self.consumer)
        self.members = Members(
            client, self.keys.tournament_services(), self.consumer, settings.lease_ms, member_time
        )
        self.beat_seconds = min(PING_SECONDS, settings.lease_ms / 3000)
        self.readiness = Readiness()
        self.departed = Departed(client, GROUP)
        self.stopping = asyncio.Event()
        self.running = False
        self._locks: dict[str, asyncio.Lock] = {}  # appends to a tournament's log
        self._advance_locks: dict[str, asyncio.Lock] = {}  # advances of a tournament
        self._advancing: set[asyncio.Task[None]] = set()
        # Tournaments being advanced -> what was asked of them meanwhile (games that ended;
        # None: look at every table).
        self._asked: dict[str, set[str | None]] = {}
        counts = ConsumerMetrics(
            self.metrics.failures,
            self.metrics.dead_letters,
            read_failures=self.metrics.failures,
            by_reason=False,
        )
        self.commands = StreamConsumer(
            client,
            Reading.from_settings(
                settings,
                GROUP,
                [self.keys.tournament_commands()],
                self.keys.dead_letters(),
                consumer=self.consumer,
                concurrency=8,
            ),
            self.handle_command,
            counts,
            on_dead_letter=self._answer_dead_letter,
            log=self.log_,
        )
        self.feed = StreamConsumer(
            client,
            Reading.from_settings(
                settings,
                GROUP,
                self.bus.feed_streams(),
                None,  # a news entry given up leaves its table to the sweep
                consumer=self.consumer,
                concurrency=8,
            ),
            self.handle_news,
            ConsumerMetrics(
                self.metrics.failures,
                self.metrics.dead_letters,
                handled=self.metrics.feed,
                by_reason=False,
            ),
            wants=_ends_a_game,
            log=self.log_,
        )

    # --- the loops ------------------------------------------------------------------------

    async def run(self) -> None:
        """Read commands and the feed and sweep until ``stop``; then drain."""
        if not await self.commands.join(self.stopping):
            return
        if not await self.feed.join(self.stopping):
            return
        await self.beat()
        self.running = True
        self.commands.start()
        self.feed.start()
        loops = [
            asyncio.create_task(self._sweep_loop(), name="sweep"),
            asyncio.create_task(self._presence_loop(), name="presence"),
        ]
        try:
            await self.stopping.wait()
        finally:
            self.running = False
            for task in loops:
                task.cancel()
            await asyncio.gather(*loops, return_exceptions=True)
            unfinished = await self.commands.drain() + await self.feed.drain()
            if self._advancing:
                await asyncio.wait(set(self._advancing), timeout=self.settings.drain_seconds)
            for task in list(self._advancing):
                task.cancel()
            await asyncio.gather(*self._advancing, return_exceptions=True)
            await self.referees.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.members.leave(), 2.0)
            self.log_.info("tournaments stopped", unfinished=unfinished)

    def stop(self) -> None:
        """Stop reading (what is in hand finishes within the drain deadline)."""
        self.stopping.set()

    async def ready(self) -> tuple[bool, str]:
        """Ready while the loops run, not draining, and its last heartbeat reached Redis (the
        last known state: no call of its own)."""
        if self.stopping.is_set():
            return False, "draining"
        if not self.running:
            return False, "not reading its streams"
        return self.readiness.answer("running tournaments")

    # --- presence -------------------------------------------------------------------------

    async def beat(self) -> list[str]:
        """Heartbeat among the tournament services, its outcome noted as the readiness; the
        live ones."""
        try:
            live = await self.members.beat()
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self.readiness.failed(f"redis: {err}")
            return []
        self.readiness.reached()
        return live

    async def forget_departed(self, live: list[str]) -> list[str]:
        """On the first live process by name (``live``: from the last heartbeat): delete the
        departed ones' consumers from the command stream's group and the feed's once nothing
        is pending for them (``stream consumer``)."""
        if not live or live[0] != self.consumer:
            return []
        keep = {*live, self.consumer}
        streams = [self.keys.tournament_commands(), *self.bus.feed_streams()]
        gone = await self.departed.forget(streams, keep.__contains__)
        if gone:
            self.log_.info("departed consumers forgotten", consumers=gone[:20], count=len(gone))
        return gone

    async def _presence_loop(self) -> None:
        beats = 0
        while not self.stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), self.beat_seconds)
            live = await self.beat()
            beats += 1
            if beats % TIDY_EVERY == 0:
                try:
                    await self.forget_departed(live)
                except asyncio.CancelledError:
                    raise
                except Exception as err:
                    self.log_.warning("forgetting departed consumers failed", error=str(err))

    async def _sweep_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                self.metrics.failures.inc()
                self.log_.warning("sweeping the tournaments failed", error=str(err))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), self.sweep_seconds)

    async def sweep(self) -> int:
        """Advance every running tournament (any step a crash or a lost news left undone), and
        list every tournament not over under the status its log has (a crash between an append
        and the listing left it under the one before); returns how many were looked at. Only
        the first sweep looks at the tournaments not yet running too (a crash is what leaves
        one listed wrong, and every account may create tournaments that never start). The
        first that can then forgets the game -> table entries of tournaments over
        (``tidy_tables``)."""
        self.metrics.sweeps.inc()
        ids: list[str] = []
        for status in OPEN_STATUSES if not self._swept else ("running",):
            ids.extend(await self.index.ids(status, 0, 1_000_000))
        self._swept = True
        for tournament_id in ids:
            if self.stopping.is_set():
                break
            try:
                await self._relist(tournament_id)
                await self.advance(tournament_id)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                self.metrics.failures.inc()
                self.log_.warning(
                    "a tournament step failed", tournament=tournament_id, error=str(err)
                )
        if not self._tidied and not self.stopping.is_set():
            try:  # after the steps: a large map's tidying holds up no tournament
                await self.tidy_tables()
                self._tidied = True
            except asyncio.CancelledError:
                raise
            except Exception as err:  # the next sweep tries again
                self.metrics.failures.inc()
                self.log_.warning(
                    "forgetting the tables of tournaments over failed", error=str(err)
                )
        return len(ids)

    async def _relist(self, tournament_id: str) -> None:
        state = (await self.log.load(tournament_id)).state
        if state.status and not await self.index.listed(tournament_id, state.status):
            if not (await self.log.store.version(tournament_id))[0]:
                return  # (a kept fold of a log the archiver has let go: listed no more)
            created = await self.log.created(tournament_id)
            await self.index.place(tournament_id, state.status, created, summary(state))

    def _advance_soon(self, tournament_id: str, ended: str | None = None) -> None:
        """Advance a tournament in a task of its own, after a command that may start a round
        or the news of a table's end (``ended``: that game), so that seating a whole round
        holds up no feed entry of another tournament. One advance of a tournament runs at a
        time; what is asked meanwhile is done by it next, all at once."""
        if self.stopping.is_set():
            return
        asked = self._asked.get(tournament_id)
        if asked is not None:  # one is running: it looks again once done
            asked.add(ended)
            return
        self._asked[tournament_id] = set()
        task = asyncio.create_task(self._advance_logged(tournament_id, ended), name="advance")
        self._advancing.add(task)
        task.add_done_callback(self._advancing.discard)

    async def _advance_logged(self, tournament_id: str, ended: str | None) -> None:
        looking: frozenset[str] | None = None if ended is None else frozenset({ended})
        try:
            while True:
                try:
                    await self.advance(tournament_id, looking)
                except asyncio.CancelledError:
                    raise
                except Exception as err:  # the sweep finds the step again
                    self.metrics.failures.inc()
                    self.log_.warning(
                        "a tournament step failed", tournament=tournament_id, error=str(err)
                    )
                asked = self._asked[tournament_id]
                if not asked or self.stopping.is_set():
                    return
                looking = None if None in asked else frozenset(g for g in asked if g)
                asked.clear()
        finally:
            self._asked.pop(tournament_id, None)

    # --- commands -------------------------------------------------------------------------

    async def handle_command(self, delivery: Delivery) -> None:
        """One command entry: decide it, append, answer (the entry is acknowledged after)."""
        try:
            entry = CommandEntry.decode(delivery.fields, KINDS)
            check_tournament_id(entry.game)
        except (MalformedEntry, TournamentError) as err:
            raise DeadLetter(f"malformed: {err}") from None
        actor = entry.body.get("actor")
        payload = entry.body.get("payload")
        if not isinstance(actor, str) or not actor or not isinstance(payload, dict):
            answer = _answer(
                "rejected", 0, "", "bad_command", "the body needs an actor and a payload", "body"
            )
        else:
            answer = await self.apply(entry.game, entry.kind, entry.cid, payload, actor)
        if entry.reply.startswith(self.keys.replies("")) and entry.rid:
            reply = Answer(
                entry.rid,
                entry.game,
                answer["status"],
                answer["version"],
                answer["head"],
                answer["code"],
                answer["message"],
                duplicate=answer["duplicate"],
                field=answer["field"],
            )
            await self.client.xadd(entry.reply, reply.encode(), maxlen=REPLY_LEN, approximate=True)
        if answer["status"] == "accepted":
            self._advance_soon(entry.game)

    async def _answer_dead_letter(self, delivery: Delivery, reason: str, pipe: Any) -> None:
        """A command given up is answered, so its sender does not wait for nothing."""
        try:
            entry = CommandEntry.decode(delivery.fields, KINDS)
        except MalformedEntry:
            return
        if entry.reply.startswith(self.keys.replies("")) and entry.rid:
            answer = Answer(
                entry.rid, entry.game, "rejected", 0, "", "command_failed", reason[:200]
            )
            pipe.xadd(entry.reply, answer.encode(), maxlen=REPLY_LEN, approximate=True)

    async def apply(
        self, tournament_id: str, kind: str, command_id: str, payload: dict[str, Any], actor: str
    ) -> dict[str, Any]:
        """Decide one command and append its events; the answer (status ``accepted`` or
        ``rejected``, version, head, code, message, field, duplicate). A refusal writes
        nothing; a command id applied before is answered with its first outcome."""
        digest = command_fingerprint(kind, payload)
        lock = self._locks.setdefault(tournament_id, asyncio.Lock())
        async with lock:
            for _ in range(ATTEMPTS):
                answer = await self._apply_once(
                    tournament_id, kind, command_id, payload, actor, digest
                )
                if answer is not None:
                    self.metrics.commands.labels(kind, answer["status"]).inc()
                    return answer
                self.log.forget(tournament_id)
        raise RuntimeError(f"tournament {tournament_id}: {ATTEMPTS} appends met a conflict")

    async def _apply_once(
        self,
        tournament_id: str,
        kind: str,
        command_id: str,
        payload: dict[str, Any],
        actor: str,
        digest: str,
    ) -> dict[str, Any] | None:
        seen = await self.log.store.outcome(tournament_id, command_id)
        if seen is not None:
            if seen.fingerprint is not None and seen.fingerprint != digest:
                return _answer(
                    "rejected",
                    seen.last_version,
                    seen.head,
                    "command_id_reused",
                    f"command id {command_id!r} was used before for a different command",
                    "command_id",
                )
            return _answer("accepted", seen.last_version, seen.head, duplicate=True)
        folded = await self.log.load(tournament_id)
        if not folded.version:
            archived = await self._archived_tournament(tournament_id, kind)
            if archived is not None:
                return archived
        try:
            command = command_from(kind, payload)
            if kind == "create" and payload.get("tournament_id") != tournament_id:
                raise TournamentError(
                    "bad_command",
                    f"tournament_id is {payload.get('tournament_id')!r}; allowed: "
                    f"{tournament_id!r}, the tournament the command is sent to",
                    "tournament_id",
                )
            events = decide(folded.state, command, actor)
        except TournamentError as err:
            return _answer(
                "rejected", folded.version, folded.head, err.code, err.message, err.field
            )
        if not folded.version:  # listed first: a crash after the append leaves it to the sweep
            await self.index.place(tournament_id, "created", time.time())
        if isinstance(command, FinishTournament):
            await self._forget_tables(folded.state)
        try:
            result = await self.log.append(tournament_id, events, folded, command_id, actor, digest)
        except VersionConflict:
            return None
        after = await self.log.load(tournament_id)
        created = await self.log.created(tournament_id) or time.time()
        await self.index.place(tournament_id, after.state.status, created, summary(after.state))
        return _answer("accepted", result.last_version, result.head, duplicate=result.duplicate)

    async def _archived_tournament(self, tournament_id: str, kind: str) -> dict[str, Any] | None:
        """The refusal of a command (of ``kind``) for a tournament whose log has left Redis for
        the archive (played to its finish, archived, and let go after its retention), else
        None. Its archived record is final: a ruling would append to a log that is gone, and a
        create sent again (its command outcome went with the log) would make another
        tournament under the archived one's id, whose log the archive would refuse for ever.
        A create is refused as for any tournament that exists, the rest as for one over."""
        if self.archive is None:
            return None
        await self.archive.open()
        entry = await self.archive.tournament_entry(tournament_id)
        if entry is None:
            return None
        code = "tournament_exists" if kind == "create" else "tournament_finished"
        message = (
            f"tournament {tournament_id} was played to its finish and archived: its record is "
            "final and takes no more commands (it stays readable)"
        )
        return _answer("rejected", entry.events, entry.head, code, message, "tournament_id")

    async def step(self, tournament_id: str, command: Command) -> dict[str, Any]:
        """Append one of the service's own steps (its command id names the step)."""
        kind, payload = command_parts(command)
        answer = await self.apply(tournament_id, kind, step_id(command), payload, SERVICE)
        if answer["status"] == "accepted" and not answer["duplicate"]:
            self.metrics.steps.labels(kind).inc()
        elif answer["status"] != "accepted":
            self.log_.info(
                "a step was refused", tournament=tournament_id, kind=kind, code=answer["code"]
            )
        return answer

    # --- the feed -------------------------------------------------------------------------

    async def handle_news(self, delivery: Delivery) -> None:
        """A game's end: if it is a table's game, advance its tournament."""
        try:
            news = News.decode(delivery.fields)
        except MalformedEntry as err:
            raise DeadLetter(f"malformed: {err}") from None
        where = await self.client.hget(self.keys.tournament_tables(), news.game)
        if where is None:
            return
        tournament_id = _tournament_of(where)
        self._advance_soon(tournament_id, news.game)  # (lost in a crash: the sweep does it)

    # --- running a round ------------------------------------------------------------------

    async def advance(self, tournament_id: str, ended: frozenset[str] | None = None) -> None:
        """Do every step the tournament's log says is due: seat and start its paired tables,
        finish its tables whose games ended, pair the next round or finish it. ``ended``: the
        games whose ends' news this is, the tables' games to look at (a sweep looks at all:
        a round of 64 tables would read 64 games at each of its 64 ends otherwise).

        One advance of a tournament runs at a time, a sweep's too: two at once would both
        read a game whose end is in, each its whole log, for one ``TableFinished``."""
        async with self._advance_locks.setdefault(tournament_id, asyncio.Lock()):
            await self._advance(tournament_id, ended)

    async def _advance(self, tournament_id: str, ended: frozenset[str] | None) -> None:
        for _ in range(MAX_STEPS):
            if self.stopping.is_set() and not self.running:
                return
            state = (await self.log.load(tournament_id)).state
            if state.status != "running":
                return
            if not await self._table_steps(state, ended):
                following = next_command((await self.log.load(tournament_id)).state)
                if following is None:
                    return
                answer = await self.step(tournament_id, following)
                if answer["status"] != "accepted":
                    return

    async def _table_steps(self, state: Tournament, ended: frozenset[str] | None = None) -> bool:
        """The current round's table steps (of started tables, only ``ended``'s, if given);
        whether any was taken."""
        if not state.played:
            return False
        moved = False
        tables = state.played[-1].tables
        for table in tables:
            if table.status != "started":
                self._in_play.pop(table.game_id, None)  # finished or annulled: read no more
            if table.status == "paired":
                try:
                    await self.start_table(state, table)
                except (RuntimeError, TimeoutError) as err:  # the next sweep tries it again
                    self.metrics.failures.inc()
                    self.log_.warning(
                        "a table could not be started",
                        tournament=state.tournament_id,
                        game=table.game_id,
                        error=str(err),
                    )
                    continue  # the round's other tables start all the same
                moved = True
            elif table.status == "started" and (ended is None or table.game_id in ended):
                finish = await self.finished_table(table)
                if finish is not None:
                    await self.step(state.tournament_id, finish)
                    moved = True
        return moved

    async def _forget_tables(self, state: Tournament) -> None:
        """A tournament's games leave the game -> table map before its finish is appended
        (whoever finishes it): every table is over by then, so no end of theirs can move it,
        and the map would grow by every table ever played. Forgotten first, so that a crash
        between the two leaves a tournament still running, whose finish is done again (the
        sweep's step, or the director's command redelivered), forgetting them again first;
        after it, nothing is left to do."""
        await self._unmap([table.game_id for played in state.played for table in played.tables])

    async def _unmap(self, games: list[str]) -> int:
        """Forget ``games`` in the game -> table map, a page at a time; how many were there."""
        gone = 0
        for start in range(0, len(games), MAP_PAGE):
            gone += await self.client.hdel(
                self.keys.tournament_tables(), *games[start : start + MAP_PAGE]
            )
        return int(gone)

    async def tidy_tables(self) -> int:
        """Forget the game -> table map's entries of tournaments that are over (finished, or
        let go from Redis); how many. A finish forgets its tables first, but a deployment whose
        finishes did not (or a map restored from an older backup) keeps the entries of every
        table ever played. Each tournament is read once; a status only moves on, so what is
        over here stays over."""
        over: dict[str, bool] = {}
        stale: list[str] = []
        async for game, where in self.client.hscan_iter(
            self.keys.tournament_tables(), count=MAP_PAGE
        ):
            tournament_id = _tournament_of(where)
            if tournament_id not in over:
                over[tournament_id] = await self._over(tournament_id)
            if over[tournament_id]:
                stale.append(_text(game))
        forgotten = await self._unmap(stale)
        if forgotten:
            self.log_.info("forgot the tables of tournaments over", entries=forgotten)
        return forgotten

    async def _over(self, tournament_id: str) -> bool:
        """Whether a tournament is over: finished, or its log gone from Redis (only the
        archiver lets a log go, and only a finished one's)."""
        if not (await self.log.store.version(tournament_id))[0]:
            return True
        return (await self.log.load(tournament_id)).state.status == "finished"

    async def start_table(self, state: Tournament, table: Table) -> None:
        """Seat a paired table's game and start it (create, a sit per seat in seat order,
        start; each under its step's command id), then record ``TableStarted``. Done again, the
        referees answer each command with its first outcome and nothing is appended twice."""
        game = table.game_id
        where = f"{state.tournament_id}|{table.round}|{table.table}"  # read by _tournament_of
        await self.client.hset(self.keys.tournament_tables(), game, where)
        create = {
            "rules": state.rules,
            "seats": len(table.seats),
            "options": dict(state.options),
            "tournament": state.tournament_id,
        }
        await self._referee(game, "create", table_command_id("create"), create)
        for seat, who in enumerate(table.seats):
            entrant = state.entrant(who)
            # Each sit names its seat: the game's seat i is the table's seats[i], or the sit is
            # refused (seat_taken: someone else sat there) rather than seated elsewhere.
            if who.startswith(BOT):
                body: dict[str, Any] = {"bot": who[len(BOT) :], "seat": seat}
                if entrant is not None:
                    body["name"] = entrant.name
            else:
                body = {"name": entrant.name if entrant else who, "player": who, "seat": seat}
            await self._referee(game, "sit", table_command_id(f"sit:{seat}"), body)
        await self._referee(game, "start", table_command_id("start"), {})
        await self.step(state.tournament_id, StartTable(table.round, table.table, game))

    async def _referee(self, game: str, kind: str, cid: str, body: dict[str, Any]) -> None:
        entry = CommandEntry(game, kind, cid, body, at=time.time())
        answer = await self.referees.request(entry, REFEREE_TIMEOUT)
        self.metrics.game_commands.labels(kind).inc()
        if answer["status"] != "accepted":
            raise RuntimeError(
                f"game {game}: {kind} was {answer['status']}: {answer.get('code')} "
                f"{answer.get('message')}"
            )

    async def finished_table(self, table: Table) -> FinishTable | None:
        """The ``FinishTable`` of a started table whose game has ended, else None. Its head
        is the log's head when read (the game's end is in it).

        A round's every game end and every sweep ask this of each of its started tables, so a
        game still in play is fetched only past what an earlier ask fetched of it, and its whole
        log once more when its end is in: each record is fetched about twice in all, not once
        per ask. Only the records of ``TABLE_TYPES`` are decoded (of those fetched in play,
        only an end's), not the game's hundreds of turns."""
        game = table.game_id
        seen = self._in_play.get(game, 0)
        head = await self.games.version(game)
        if not head[0]:  # left Redis for the archive (or not there at all)
            return self._finish(table, *await self._archived(game))
        if head[0] <= seen:
            return None  # nothing new
        # Up to the head, not past it (``read_types`` would read on): what is appended
        # meanwhile is fetched by the next ask alone, and the result is the head's.
        records = await self.games.records(game, seen, head[0] - seen)
        if seen:  # in play when last asked: the whole log only once its end is in
            if not codec.decode_of_types(records, ENDS, self.games.upcasters):
                self._in_play[game] = head[0]
                return None
            records = await self.games.records(game, 0, head[0])
        return self._finish(
            table, head, codec.decode_of_types(records, TABLE_TYPES, self.games.upcasters)
        )

    async def _archived(self, game: str) -> tuple[tuple[int, str], list[StoredEvent]]:
        """An archived game's head and its events of ``TABLE_TYPES``; ``(0, GENESIS_HASH)``
        and none when it is not archived (or there is no archive)."""
        if self.archive is None:
            return genesis_head(), []
        await self.archive.open()
        record = await self.archive.fetch(game)
        if record is None or not record.events:
            return genesis_head(), []
        last = record.events[-1]
        upcast = self.games.upcasters.upcast
        return (last.version, last.hash), [
            upcast(s) for s in record.events if s.type in TABLE_TYPES
        ]

    def _finish(
        self, table: Table, head: tuple[int, str], stored: list[StoredEvent]
    ) -> FinishTable | None:
        """The table's ``FinishTable`` from its game's events of ``TABLE_TYPES`` up to
        ``head``, or None while it has neither ended nor been cancelled."""
        game = table.game_id
        events = [game_event(s.type, s.data) for s in stored]
        ended = next((e for e in events if isinstance(e, MatchEnded)), None)
        cancelled = any(isinstance(e, GameCancelled) for e in events)
        if ended is None and not cancelled:
            if head[0]:
                self._in_play[game] = head[0]
            return None
        self._in_play.pop(game, None)
        results = () if ended is None else table_result(seated_players(events), ended)
        return FinishTable(table.round, table.table, game, results, head)


def _answer(
    status: str,
    version: int,
    head: str,
    code: str | None = None,
    message: str | None = None,
    field: str | None = None,
    duplicate: bool = False,
) -> dict[str, Any]:
    return {
        "status": status,
        "version": version,
        "head": head,
        "code": code,
        "message": message,
        "field": field,
        "duplicate": duplicate,
    }


def _ends_a_game(delivery: Delivery) -> bool:
    """Only news of a game's end can move a tournament on."""
    try:
        news = News.decode(delivery.fields)
    except MalformedEntry:
        return True  # handled: dead-lettered with its reason
    return not ENDS.isdisjoint(news.types)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _tournament_of(where: Any) -> str:
    """The tournament of a game -> table entry (``<tournament>|<round>|<table>``)."""
    return _text(where).split("|")[0]
