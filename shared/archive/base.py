"""What every archive promises: a finished game stored once as its record, read back whole,
and listed by what people look up (when it ended, its rule set, a player, the winner).

A game is archived once, as one history: storing a record whose game is already there with the
same chain head is a no-op (a rerun of the archiver after a crash). A record that extends the
archived one (its chain holds the archived head at the archived version: the same events, more
after them, as a rematch offered after the end appends) replaces it, in one transaction and only
if the row is still the one it extends. Any other head is refused (:class:`ArchiveConflict`),
a shorter record included: nothing ever rewrites or cuts short an archived history. The text is
kept compressed with its SHA-256; a read that does not give back those very bytes fails loudly
rather than hand out a record that is not the one stored.

Listing pages by keyset ``(finished, game_id)``, newest first, so a page costs the same however
deep it is and a game archived while someone pages does not shift what they see.

A finished tournament is kept the same way (``store_tournament``: its log's record, audited by
the archiver first; ``shared/archive/tournaments.py``), with the same promises: one history, a
longer log of it (a ruling after the finish) replaces it, nothing else does.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from shared.archive import tournaments
from shared.archive.sealed import ArchiveConflict as ArchiveConflict  # (callers import here)
from shared.archive.sealed import ArchiveError as ArchiveError
from shared.archive.sealed import E, seal, unseal
from shared.archive.sealed import Row as Row
from shared.archive.tournaments import TournamentEntry, TournamentRecord
from shared.audit.record import GameRecord, dumps, ended, loads
from shared.infra.chain import verify_chain
from shared.infra.keys import check_game_id
from shared.infra.tournaments import check_tournament_id

PAGE = 50
MAX_PAGE = 200
MAX_NAME = 200
MAX_OFFSET = 10**9


class QueryError(ValueError):
    """A listing asked with a bad parameter; names the field, what was wrong, what is allowed."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
        self.message = message


@dataclass(frozen=True, slots=True)
class Entry:
    """What the archive's index says of one game (the record itself is fetched apart)."""

    game_id: str
    rules: str
    players: tuple[str, ...]
    winners: tuple[str, ...]
    finished: float  # the time of its MatchEnded (unix seconds)
    events: int
    head: str
    archived: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "game_id": self.game_id,
            "rules": self.rules,
            "players": list(self.players),
            "winners": list(self.winners),
            "finished": self.finished,
            "events": self.events,
            "head": {"version": self.events, "hash": self.head},
            "archived": self.archived,
        }


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a listing and the cursor of the next (None on the last)."""

    entries: tuple[Entry, ...]
    next: str | None

    def to_json(self) -> dict[str, Any]:
        return {"games": [e.to_json() for e in self.entries], "next": self.next}


def _name(field_name: str, value: str | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_NAME:
        raise QueryError(field_name, f"must be a name of 1-{MAX_NAME} characters, got {value!r}")
    return value


def _moment(field_name: str, value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise QueryError(field_name, f"must be unix seconds (a finite number), got {value!r}")
    return float(value)


def parse_cursor(cursor: str) -> tuple[float, str]:
    """The ``(finished, game_id)`` a cursor stands after; :class:`QueryError` if it is not one
    this archive handed out."""
    finished, sep, game_id = cursor.partition("|") if isinstance(cursor, str) else ("", "", "")
    try:
        moment = float(finished)
        check_game_id(game_id)
    except ValueError:
        moment = math.nan
    if not sep or not math.isfinite(moment):
        raise QueryError("cursor", f"must be the 'next' of a page, got {cursor!r}")
    return moment, game_id


def cursor_of(entry: Entry) -> str:
    """The cursor of the page after ``entry``."""
    return f"{entry.finished!r}|{entry.game_id}"


@dataclass(frozen=True, slots=True)
class Query:
    """A listing: finished games with every filter given (all optional), newest first."""

    since: float | None = None  # finished at or after (unix seconds)
    until: float | None = None  # finished before
    rules: str | None = None
    player: str | None = None
    winner: str | None = None
    limit: int = PAGE
    cursor: str | None = None
    offset: int = 0  # games skipped first (the lobby's numbered pages; a cursor is cheaper)
    after: tuple[float, str] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        _moment("since", self.since)
        _moment("until", self.until)
        for name in ("rules", "player", "winner"):
            _name(name, getattr(self, name))
        if isinstance(self.limit, bool) or not isinstance(self.limit, int):
            raise QueryError("limit", f"must be an integer 1-{MAX_PAGE}, got {self.limit!r}")
        if not 1 <= self.limit <= MAX_PAGE:
            raise QueryError("limit", f"must be 1-{MAX_PAGE}, got {self.limit}")
        if isinstance(self.offset, bool) or not isinstance(self.offset, int):
            raise QueryError("offset", f"must be an integer 0-{MAX_OFFSET}, got {self.offset!r}")
        if not 0 <= self.offset <= MAX_OFFSET:
            raise QueryError("offset", f"must be 0-{MAX_OFFSET}, got {self.offset}")
        if self.cursor is not None:
            object.__setattr__(self, "after", parse_cursor(self.cursor))


def entry_of(record: GameRecord, archived: float = 0.0) -> Entry:
    """The index entry of a record; :class:`ArchiveError` unless it is a whole finished game
    whose chain holds (the full audit is the archiver's: ``shared.audit.verify``)."""
    events = record.events
    if not ended(events):
        raise ArchiveError(f"game {record.game_id} has not ended: only finished games archive")
    broken = verify_chain(events, game_id=record.game_id)
    if broken is not None:
        raise ArchiveError(f"game {record.game_id}: the chain breaks at version {broken + 1}")
    last = events[-1]
    if record.head != (last.version, last.hash):
        raise ArchiveError(f"game {record.game_id}: the head line is not the last event")
    end = [e for e in events if e.type == "MatchEnded"][-1]
    players = record.header.players
    seats = end.data.get("winners") or []
    winners = tuple(players[s] for s in seats if isinstance(s, int) and 0 <= s < len(players))
    return Entry(
        game_id=record.game_id,
        rules=record.header.rules,
        players=tuple(players),
        winners=winners,
        finished=float(end.time),
        events=last.version,
        head=last.hash,
        archived=float(archived),
    )


def prepare(record: GameRecord, archived: float) -> Row[Entry]:
    """The row of a record (the checks of ``entry_of``, the text packed): the CPU's part of
    storing it, apart from the database's (``Archive.write``) so a caller may do it off the
    event loop."""
    blob, digest = pack(record)
    entry = entry_of(record, archived)
    return Row(entry, blob, digest, tuple(event.hash for event in record.events))


def pack(record: GameRecord) -> tuple[bytes, str]:
    """The stored form of a record: its text compressed, and the text's SHA-256."""
    return seal(dumps(record))


def unpack(game_id: str, blob: bytes, digest: str) -> GameRecord:
    """The record stored as ``blob``; :class:`ArchiveError` if it is not the text stored."""
    record = loads(unseal(f"game {game_id}", blob, digest))
    if record.game_id != game_id:
        raise ArchiveError(f"the record archived as {game_id} is game {record.game_id}")
    return record


async def _settled(
    row: Row[E],
    insert_and_read: Callable[[E, bytes, str], Awaitable[E | None]],
    replace_and_read: Callable[[E, E, bytes, str], Awaitable[E | None]],
    what: str,
) -> E:
    """A row stored (``insert_and_read``), or put over the row it extends
    (``replace_and_read``), as read back; :class:`ArchiveConflict` if ``what`` is archived with
    another history, left as it was."""
    entry = row.entry
    stored = await insert_and_read(entry, row.blob, row.digest)
    if stored is not None and stored.head != entry.head and row.extends(stored):
        stored = await replace_and_read(stored, entry, row.blob, row.digest)
    if stored is None:
        raise ArchiveError(f"{what}: the archive lost the row it committed")
    if stored.head != entry.head or stored.events != entry.events:
        raise ArchiveConflict(
            f"{what} is archived with head {stored.events}:"
            f"{stored.head[:12]}…, not {entry.events}:{entry.head[:12]}…; left as it was"
        )
    return stored


class Archive(ABC):
    """Finished games and tournaments, each as its record; see the module docstring for the
    guarantees."""

    name = "archive"

    async def store(self, record: GameRecord, archived: float) -> Entry:
        """Archive ``record`` (at time ``archived``) and return its entry as read back. A game
        already archived with the same head is left as it is (its first entry is returned);
        archived with a history ``record`` extends, it is replaced (archived now); with any
        other head, :class:`ArchiveConflict`."""
        return await self.write(prepare(record, archived))

    async def write(self, row: Row[Entry]) -> Entry:
        """The database's part of ``store``: the row committed, then read back."""
        return await _settled(
            row, self._insert_and_read, self._replace_and_read, f"game {row.entry.game_id}"
        )

    async def entry(self, game_id: str) -> Entry | None:
        """The game's index entry, or None if it is not archived."""
        check_game_id(game_id)
        return await self._entry(game_id)

    async def fetch(self, game_id: str) -> GameRecord | None:
        """The game's record as it was stored, or None if it is not archived."""
        check_game_id(game_id)
        row = await self._blob(game_id)
        return None if row is None else unpack(game_id, *row)

    async def listing(self, query: Query) -> Page:
        """One page of finished games matching ``query``, newest first."""
        entries = await self._list(query, query.limit + 1)
        more = len(entries) > query.limit
        entries = entries[: query.limit]
        return Page(tuple(entries), cursor_of(entries[-1]) if more and entries else None)

    async def game_ids(self) -> list[str]:
        """Every archived game's id, newest finished first (page by page)."""
        ids: list[str] = []
        cursor: str | None = None
        while True:
            page = await self.listing(Query(limit=MAX_PAGE, cursor=cursor))
            ids += [entry.game_id for entry in page.entries]
            if page.next is None:
                return ids
            cursor = page.next

    # --- finished tournaments (``shared.archive.tournaments``): the same promises -----------

    async def store_tournament(self, record: TournamentRecord, archived: float) -> TournamentEntry:
        """Archive a finished tournament's ``record``, as ``store`` a game's: the same head
        again is a no-op, a longer log of its history replaces it, any other head is
        :class:`ArchiveConflict`."""
        return await self.write_tournament(tournaments.prepare(record, archived))

    async def write_tournament(self, row: Row[TournamentEntry]) -> TournamentEntry:
        """The database's part of ``store_tournament``: the row committed, then read back."""
        return await _settled(
            row,
            self._insert_tournament_and_read,
            self._replace_tournament_and_read,
            f"tournament {row.entry.tournament_id}",
        )

    async def tournament_entry(self, tournament_id: str) -> TournamentEntry | None:
        """The tournament's index entry, or None if it is not archived."""
        return await self._tournament_entry(check_tournament_id(tournament_id))

    async def fetch_tournament(self, tournament_id: str) -> TournamentRecord | None:
        """The tournament's record as it was stored, or None if it is not archived."""
        row = await self._tournament_blob(check_tournament_id(tournament_id))
        return None if row is None else tournaments.unpack(tournament_id, *row)

    async def tournament_listing(
        self, limit: int = PAGE, offset: int = 0
    ) -> tuple[list[TournamentEntry], bool]:
        """Up to ``limit`` archived tournaments after the first ``offset``, newest finished
        first, and whether more follow."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
            raise QueryError("limit", f"must be an integer 1-{MAX_PAGE}, got {limit!r}")
        if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= MAX_OFFSET:
            raise QueryError("offset", f"must be an integer 0-{MAX_OFFSET}, got {offset!r}")
        entries = await self._list_tournaments(limit + 1, offset)
        return entries[:limit], len(entries) > limit

    async def _insert_tournament_and_read(
        self, entry: TournamentEntry, blob: bytes, digest: str
    ) -> TournamentEntry | None:
        await self._insert_tournament(entry, blob, digest)
        return await self._tournament_entry(entry.tournament_id)

    async def _replace_tournament_and_read(
        self, old: TournamentEntry, entry: TournamentEntry, blob: bytes, digest: str
    ) -> TournamentEntry | None:
        await self._replace_tournament(old, entry, blob, digest)
        return await self._tournament_entry(entry.tournament_id)

    @abstractmethod
    async def count_tournaments(self) -> int:
        """How many tournaments are archived."""

    @abstractmethod
    async def _insert_tournament(self, entry: TournamentEntry, blob: bytes, digest: str) -> bool:
        """The tournament's row unless it is there already; whether it inserted."""

    @abstractmethod
    async def _replace_tournament(
        self, old: TournamentEntry, entry: TournamentEntry, blob: bytes, digest: str
    ) -> bool:
        """The tournament's row replaced by ``entry``'s, only if it is still ``old`` (its
        version and head); whether it replaced."""

    @abstractmethod
    async def _tournament_entry(self, tournament_id: str) -> TournamentEntry | None: ...

    @abstractmethod
    async def _tournament_blob(self, tournament_id: str) -> tuple[bytes, str] | None: ...

    @abstractmethod
    async def _list_tournaments(self, limit: int, offset: int) -> list[TournamentEntry]:
        """Up to ``limit`` entries after the first ``offset``, newest finished first."""

    # --- the backend's part -------------------------------------------------------------

    @abstractmethod
    async def open(self) -> None:
        """Connect and bring the schema up to date (``shared.archive.schema``)."""

    @abstractmethod
    async def close(self) -> None:
        """Release the connections."""

    @abstractmethod
    async def schema_version(self) -> int:
        """The schema version the database is at."""

    @abstractmethod
    async def count(self) -> int:
        """How many games are archived."""

    @abstractmethod
    async def _insert(self, entry: Entry, blob: bytes, digest: str) -> bool:
        """In one transaction, the game's row and its players' unless the game is there
        already; whether it inserted."""

    async def _insert_and_read(self, entry: Entry, blob: bytes, digest: str) -> Entry | None:
        """``_insert``, then the game's entry read back after the commit (a backend may do both
        over one connection)."""
        await self._insert(entry, blob, digest)
        return await self._entry(entry.game_id)

    @abstractmethod
    async def _replace(self, old: Entry, entry: Entry, blob: bytes, digest: str) -> bool:
        """In one transaction, the game's row and its players' replaced by ``entry``'s, only
        if the row is still ``old`` (its version and head); whether it replaced."""

    async def _replace_and_read(
        self, old: Entry, entry: Entry, blob: bytes, digest: str
    ) -> Entry | None:
        """``_replace``, then the game's entry read back after the commit (a backend may do
        both over one connection)."""
        await self._replace(old, entry, blob, digest)
        return await self._entry(entry.game_id)

    @abstractmethod
    async def _entry(self, game_id: str) -> Entry | None: ...

    @abstractmethod
    async def _blob(self, game_id: str) -> tuple[bytes, str] | None: ...

    @abstractmethod
    async def _list(self, query: Query, limit: int) -> list[Entry]:
        """Up to ``limit`` entries matching ``query`` after its cursor, newest first."""
