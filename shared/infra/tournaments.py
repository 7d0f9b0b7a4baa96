"""Tournaments on Redis: their logs, their listing, and the desk the gateway sends commands at.

- The log: a tournament's events in the games' event store (``RedisEventStore``) under a key
  prefix of its own (``Keys.tournament_logs``), so a tournament's log is hash-chained, appended
  with an expected version and de-duplicated by command id exactly as a game's, while its id
  never shows in the games' index (``{prefix}tour:games`` is the tournaments').
- The listing: one sorted set per status (and ``all``) of tournament ids by creation time,
  moved on by whoever appends (the tournament service), and each one's row; a finished
  tournament leaves them when the archiver lets it go from Redis, and the finished and all
  listings go on past them with what the reader says is past (``PastTournaments``: the
  gateway's archive).
- The desk: commands travel on the tournament command stream (``Keys.tournament_commands``)
  as the bus's ``CommandEntry`` (kind: a tournament command kind; body: ``actor`` and
  ``payload``) and the service answers on the sender's reply stream, as the referee answers a
  game's: the bus's ``Requester`` does the waiting.
"""

from __future__ import annotations

import json
import time as _time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

from shared.infra.bus import Bus, Requester, fingerprint
from shared.infra.client import RedisClient
from shared.infra.keys import Keys
from shared.infra.protocol import MAX_COMMAND_ID, CommandEntry
from shared.infra.store.base import AppendResult
from shared.infra.store.redis import RedisEventStore
from shared.infra.stored import GENESIS_HASH, NewEvent
from shared.tournament.commands import KINDS, TOURNAMENT_ID, TournamentError, command_from
from shared.tournament.events import Event, event_from, to_data
from shared.tournament.state import Status, Tournament, evolve

STATUSES: tuple[Status, ...] = ("created", "registering", "running", "finished")
ALL = "all"  # the listing of every tournament, whatever its status
PAGE = 20
MAX_PAGE = 100
KEPT = 256  # tournaments' folded states a log keeps in memory
COMMANDS_MAXLEN = 100_000  # the command stream's length (far beyond any backlog of commands)
PAST_CURSOR = 500_000_000  # cursors from here on page through the tournaments Redis let go


def check_tournament_id(value: object) -> str:
    """``value`` if it is a tournament id (``t`` + 16 hex digits), else ``TournamentError``."""
    if not isinstance(value, str) or TOURNAMENT_ID.fullmatch(value) is None:
        raise TournamentError(
            "bad_command",
            f"tournament_id is {value!r}; allowed: 't' and 16 lower-case hex digits",
            "tournament_id",
        )
    return value


def command_fingerprint(kind: str, payload: dict[str, Any]) -> str:
    """What a command id is bound to: a reused id with another command differs here. A
    registration's rating is looked up by the sender at each try, and may have moved between
    a try that timed out and its retry: the same registration all the same."""
    if kind == "register":
        payload = {k: v for k, v in payload.items() if k != "rating"}
    return fingerprint({"kind": kind, "payload": payload})


@dataclass(frozen=True)
class Folded:
    """A tournament's state and its log's head (version, hash)."""

    state: Tournament
    head: str

    @property
    def version(self) -> int:
        return self.state.version


class TournamentLog:
    """The tournaments' logs: read and fold them, append decided events."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self.keys = keys
        self.store = RedisEventStore(client, keys.tournament_logs())
        self._kept: OrderedDict[str, Folded] = OrderedDict()

    async def load(self, tournament_id: str) -> Folded:
        """The tournament as its log has it now (``state.status`` "" when there is none): the
        kept fold, brought up to date with the events after it."""
        kept = self._kept.pop(tournament_id, None) or Folded(Tournament(), GENESIS_HASH)
        state, head = kept.state, kept.head
        for stored in await self.store.read(tournament_id, after=state.version):
            state = evolve(state, event_from(stored.type, stored.data))
            head = stored.hash
        folded = Folded(state, head)
        if state.version:
            self._kept[tournament_id] = folded
            while len(self._kept) > KEPT:
                self._kept.popitem(last=False)
        return folded

    def forget(self, tournament_id: str) -> None:
        """Drop the kept fold (after a conflict: someone else appended)."""
        self._kept.pop(tournament_id, None)

    def clear(self) -> int:
        """Drop every kept fold; how many there were. (Redis came back without its data: a
        fold read on would show a lost tournament as it was.)"""
        count = len(self._kept)
        self._kept.clear()
        return count

    async def append(
        self,
        tournament_id: str,
        events: list[Event],
        after: Folded,
        command_id: str,
        actor: str,
        digest: str,
    ) -> AppendResult:
        """Append ``events`` after ``after`` (raises ``VersionConflict`` if the log moved on);
        a command id applied before returns its first outcome (``duplicate``)."""
        new = [NewEvent(e.TYPE, to_data(e), e.SCHEMA, actor) for e in events]
        return await self.store.append(
            tournament_id,
            new,
            after.version,
            command_id=command_id,
            fingerprint=digest,
            expected_head=after.head,
        )

    async def created(self, tournament_id: str) -> float:
        """When the tournament was created (its first event's time; 0 if it has none)."""
        first = await self.store.read(tournament_id, limit=1)
        return first[0].time if first else 0.0


class TournamentIndex:
    """The listing: tournament ids by creation time, per status and all together."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self.client = client
        self.keys = keys

    async def place(
        self, tournament_id: str, status: str, created: float, row: dict[str, Any] | None = None
    ) -> None:
        """List the tournament under ``status`` (and no other) at its creation time, with
        ``row`` (its ``summary``) as what a page shows of it."""
        pipe = self.client.pipeline(transaction=False)
        if row is not None:
            pipe.hset(self.keys.tournament_summaries(), tournament_id, json.dumps(row))
        pipe.zadd(self.keys.tournaments(ALL), {tournament_id: created})
        for other in STATUSES:
            if other == status:
                pipe.zadd(self.keys.tournaments(other), {tournament_id: created})
            else:
                pipe.zrem(self.keys.tournaments(other), tournament_id)
        await pipe.execute()

    async def unlist(self, tournament_id: str) -> None:
        """Take the tournament off every listing, its row last (a page that still finds it
        listed reads its row): it has left Redis for the archive."""
        pipe = self.client.pipeline(transaction=False)
        for status in (*STATUSES, ALL):
            pipe.zrem(self.keys.tournaments(status), tournament_id)
        await pipe.execute()
        await self.client.hdel(self.keys.tournament_summaries(), tournament_id)

    async def listed(self, tournament_id: str, status: str) -> bool:
        """Whether the tournament is listed under ``status``."""
        return await self.client.zscore(self.keys.tournaments(status), tournament_id) is not None

    async def rows(self, tournament_ids: list[str]) -> list[dict[str, Any] | None]:
        """The kept listing rows of those tournaments (None where none is kept)."""
        if not tournament_ids:
            return []
        found = await self.client.hmget(self.keys.tournament_summaries(), tournament_ids)
        return [None if raw is None else json.loads(raw) for raw in found]

    async def ids(self, status: str, start: int, count: int) -> list[str]:
        """Ids listed under ``status``, newest first, from place ``start``."""
        found = await self.client.zrevrange(self.keys.tournaments(status), start, start + count - 1)
        return [m.decode() if isinstance(m, bytes) else str(m) for m in found]


def summary(state: Tournament) -> dict[str, Any]:
    """What a listing shows of one tournament."""
    return {
        "tournament_id": state.tournament_id,
        "name": state.name,
        "status": state.status,
        "director": state.director,
        "rules": state.rules,
        "format": state.format,
        "rounds": state.rounds,
        "round": state.current,
        "table_seats": state.table_seats,
        "fill": state.fill,
        "entrants": len(state.entrants),
        "version": state.version,
    }


class TournamentBus(Bus):
    """The bus whose command stream is the tournament service's (one stream, every
    tournament), kept to about ``COMMANDS_MAXLEN`` entries as it is added to."""

    def command_stream(self, game_id: str) -> str:
        return self.keys.tournament_commands()

    async def send(self, entry: CommandEntry) -> None:
        await self.client.xadd(
            self.command_stream(entry.game),
            entry.encode(),
            maxlen=COMMANDS_MAXLEN,
            approximate=True,
        )


def rejected(tournament_id: str, err: TournamentError, version: int = 0) -> dict[str, Any]:
    """The desk's answer to a command refused before it was sent (nothing written)."""
    return {
        "tournament_id": tournament_id,
        "status": "rejected",
        "code": err.code,
        "message": err.message,
        "field": err.field,
        "version": version,
        "duplicate": False,
    }


class PastTournaments(Protocol):
    """Finished tournaments Redis has let go (the gateway's: the archive's), for the listing."""

    async def rows(self, offset: int, limit: int) -> tuple[list[dict[str, Any]], int, bool]:
        """Listing rows of the tournaments after the first ``offset``, newest finished first,
        leaving out those Redis still lists; how many of them were passed over (rows and left
        out), and whether more follow."""
        ...


class TournamentDesk:
    """Where the gateway hands tournament commands to the tournament service and reads
    tournaments back. ``name``: the sender's own reply stream (one per gateway process)."""

    def __init__(self, client: RedisClient, keys: Keys, name: str, timeout: float = 10.0) -> None:
        self.keys = keys
        self.timeout = timeout
        self.requester = Requester(TournamentBus(client, keys, 1), f"desk-{name}")
        self.log = TournamentLog(client, keys)
        self.index = TournamentIndex(client, keys)
        # Where the finished and all listings go on once Redis's rows are through (None: they
        # end there).
        self.past: PastTournaments | None = None

    async def send(
        self,
        tournament_id: str,
        kind: str,
        command_id: str,
        payload: dict[str, Any],
        actor: str,
    ) -> dict[str, Any]:
        """Send one command and wait for the service's answer.

        ``kind``: one of ``shared.tournament.commands.KINDS``; ``payload``: its JSON body (for
        ``create`` its ``tournament_id`` is ``tournament_id``, filled in when absent);
        ``command_id``: the client's id for the command, scoped by ``actor`` (an account id):
        sending it again gets the first answer, with ``duplicate`` true, and applies nothing
        twice; ``actor``: who sends it (the director, a player, or ``service``).

        Returns ``{"tournament_id", "status": "accepted" | "rejected", "code", "message",
        "field", "version", "duplicate"}``: ``code`` one of ``commands.CODES`` (or
        ``command_id_reused``) and ``field`` the field at fault when rejected (nothing was
        written); ``version`` the log's version after it. A command malformed here is answered
        at once, without being sent. Raises ``TimeoutError`` when no service answers within the
        desk's ``timeout``.
        """
        try:
            check_tournament_id(tournament_id)
            if kind not in KINDS:
                raise TournamentError(
                    "bad_command", f"kind is {kind!r}; allowed: {', '.join(KINDS)}", "kind"
                )
            if not isinstance(payload, dict):
                raise TournamentError("bad_command", "the payload must be a JSON object", "payload")
            if kind == "create":
                payload = {"tournament_id": tournament_id, **payload}
                if payload["tournament_id"] != tournament_id:
                    raise TournamentError(
                        "bad_command",
                        f"tournament_id is {payload['tournament_id']!r}; allowed: the "
                        f"tournament's own, {tournament_id!r}",
                        "tournament_id",
                    )
            command_from(kind, payload)
            cid = f"{actor}:{command_id}"
            if not isinstance(command_id, str) or not command_id or len(cid) > MAX_COMMAND_ID:
                raise TournamentError(
                    "bad_command",
                    f"command_id is {command_id!r}; allowed: 1 to "
                    f"{MAX_COMMAND_ID - len(actor) - 1} characters",
                    "command_id",
                )
            if not isinstance(actor, str) or not actor or len(actor) > 64:
                raise TournamentError("bad_command", "actor must be 1 to 64 characters", "actor")
        except TournamentError as err:
            return rejected(tournament_id if isinstance(tournament_id, str) else "", err)
        body = {"actor": actor, "payload": payload}
        entry = CommandEntry(tournament_id, kind, cid, body, at=_time.time())
        answer = await self.requester.request(entry, self.timeout)
        return {
            "tournament_id": tournament_id,
            "status": "accepted" if answer["status"] == "accepted" else "rejected",
            "code": answer.get("code"),
            "message": answer.get("message"),
            "field": answer.get("field"),
            "version": answer["version"],
            "duplicate": answer.get("duplicate", False),
        }

    async def load(self, tournament_id: str) -> Tournament | None:
        """The tournament folded from its log, or None when there is none (or the id is not a
        tournament's)."""
        try:
            check_tournament_id(tournament_id)
        except TournamentError:
            return None
        state = (await self.log.load(tournament_id)).state
        return state if state.status else None

    async def page(self, status: str = ALL, cursor: int = 0, limit: int = PAGE) -> dict[str, Any]:
        """A page of the listing, newest first: ``{"tournaments": [summary...], "next": the
        cursor of the next page or None}``. ``status``: one of ``STATUSES`` or ``all``;
        raises ``TournamentError`` naming ``status``, ``cursor`` or ``limit`` when wrong."""
        if status != ALL and status not in STATUSES:
            raise TournamentError(
                "bad_command",
                f"status is {status!r}; allowed: {ALL}, {', '.join(STATUSES)}",
                "status",
            )
        if type(cursor) is not int or cursor < 0:
            raise TournamentError("bad_command", "cursor must be an int >= 0", "cursor")
        if type(limit) is not int or not 1 <= limit <= MAX_PAGE:
            raise TournamentError(
                "bad_command", f"limit is {limit!r}; allowed: 1 to {MAX_PAGE}", "limit"
            )
        if cursor >= PAST_CURSOR:
            return await self._past_page(status, cursor, limit, [])
        ids = await self.index.ids(status, cursor, limit + 1)
        rows = []
        listed = ids[:limit]
        for tournament_id, row in zip(listed, await self.index.rows(listed), strict=True):
            if row is None:  # listed before its first row was kept (a crash between the two)
                state = (await self.log.load(tournament_id)).state
                row = summary(state) if state.status else None
            if row is not None:
                rows.append(row)
        if len(ids) > limit:
            return {"tournaments": rows, "next": cursor + limit}
        return await self._past_page(status, PAST_CURSOR, limit - len(rows), rows)

    async def _past_page(
        self, status: str, cursor: int, limit: int, rows: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """``rows`` (the last of Redis's), then the finished tournaments Redis has let go, from
        ``cursor`` (``PAST_CURSOR`` plus their place), for the listings that hold them."""
        if self.past is None or status not in (ALL, "finished"):
            return {"tournaments": rows, "next": None}
        if limit < 1:  # the page is full: they follow on the next
            return {"tournaments": rows, "next": cursor}
        past, passed, more = await self.past.rows(cursor - PAST_CURSOR, limit)
        return {"tournaments": rows + past, "next": cursor + passed if more else None}

    async def close(self) -> None:
        """Stop following the reply stream."""
        await self.requester.close()
