"""A finished tournament as the archive keeps it: its record (the whole log, every event in its
stored form under its hash, and the head), the index entry people look it up by, and its row.

The record is JSON Lines, as a game's ``.rrec`` (``shared.audit.record``: the same event lines),
so the chain recomputes from it alone::

    {"format": "rtour", "version": 1, "tournament_id": "t...", "exported": unix seconds}
    {"version": 1, "type": "TournamentCreated", "schema": 1, "time": ..., "data": {...}, ...}
    ...
    {"head": {"version": n, "hash": "..."}}

Only a finished tournament whose chain holds is archived (the full audit, every table's game and
standing recomputed, is the archiver's: ``shared.audit.tournament``). The entry keeps what the
tournament lobby shows of it (``shared.infra.tournaments.summary``), so the lobby lists archived
tournaments without opening a record.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shared.archive.sealed import ArchiveError, Row, seal, unseal
from shared.audit.record import event_line
from shared.infra.chain import verify_chain
from shared.infra.stored import StoredEvent
from shared.infra.tournaments import check_tournament_id, summary
from shared.tournament.events import TournamentFinished, UnknownEvent, event_from
from shared.tournament.state import Tournament, evolve

FORMAT = "rtour"
VERSION = 1


@dataclass(frozen=True)
class TournamentRecord:
    """A tournament's whole log: its events in their stored form and the head line."""

    tournament_id: str
    events: tuple[StoredEvent, ...]
    head: tuple[int, str]
    exported: float = 0.0


@dataclass(frozen=True, slots=True)
class TournamentEntry:
    """What the archive's index says of one tournament (the record is fetched apart)."""

    tournament_id: str
    name: str
    rules: str
    format: str
    finished: float  # the time of its first TournamentFinished (unix seconds)
    events: int
    head: str
    summary: dict[str, Any]  # its row in the tournament lobby
    archived: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "tournament_id": self.tournament_id,
            "name": self.name,
            "rules": self.rules,
            "format": self.format,
            "finished": self.finished,
            "events": self.events,
            "head": {"version": self.events, "hash": self.head},
            "archived": self.archived,
        }


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def dumps(record: TournamentRecord) -> str:
    """The record as text (every line ends with a newline)."""
    header = {
        "format": FORMAT,
        "version": VERSION,
        "tournament_id": record.tournament_id,
        "exported": record.exported,
    }
    lines = [_dump(header), *(_dump(event_line(e)) for e in record.events)]
    version, digest = record.head
    lines.append(_dump({"head": {"version": version, "hash": digest}}))
    return "".join(line + "\n" for line in lines)


def loads(text: str) -> TournamentRecord:
    """The record ``dumps`` wrote; :class:`ArchiveError` if the text is not one."""
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        header = json.loads(lines[0])
        if header.get("format") != FORMAT or header.get("version") != VERSION:
            raise ValueError(f"the header is not a {FORMAT} record's of version {VERSION}")
        tournament_id = check_tournament_id(header["tournament_id"])
        head = json.loads(lines[-1])["head"]
        events = tuple(
            StoredEvent(game_id=tournament_id, **json.loads(line)) for line in lines[1:-1]
        )
        return TournamentRecord(
            tournament_id, events, (int(head["version"]), str(head["hash"])), header["exported"]
        )
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as err:
        raise ArchiveError(f"a tournament record cannot be read: {err}") from None


def tournament_record(events: Sequence[StoredEvent], exported: float) -> TournamentRecord:
    """The record of a tournament's log (events as read from its store: their stored forms go
    in); :class:`ArchiveError` for a log that is not one tournament's."""
    if not events:
        raise ArchiveError("a tournament record needs at least one event")
    stored = tuple(e.stored_form() for e in events)
    tournament_id = stored[0].game_id
    if any(e.game_id != tournament_id for e in stored):
        raise ArchiveError(f"the events are not all tournament {tournament_id}'s")
    last = stored[-1]
    return TournamentRecord(tournament_id, stored, (last.version, last.hash), exported)


def fold(record: TournamentRecord) -> Tournament:
    """The tournament its record makes; :class:`ArchiveError` if an event cannot be read."""
    state = Tournament()
    for event in record.events:
        try:
            state = evolve(state, event_from(event.type, dict(event.data)))
        except (UnknownEvent, TypeError, ValueError) as err:
            raise ArchiveError(
                f"tournament {record.tournament_id}: event {event.version} cannot be read: {err}"
            ) from None
    return state


def entry_of(record: TournamentRecord, archived: float = 0.0) -> TournamentEntry:
    """The index entry of a record; :class:`ArchiveError` unless it is a whole finished
    tournament whose chain holds."""
    tournament_id = record.tournament_id
    events = record.events
    broken = verify_chain(events, game_id=tournament_id)
    if broken is not None:
        raise ArchiveError(f"tournament {tournament_id}: the chain breaks at version {broken + 1}")
    last = events[-1]
    if record.head != (last.version, last.hash):
        raise ArchiveError(f"tournament {tournament_id}: the head line is not the last event")
    state = fold(record)
    if state.status != "finished":
        raise ArchiveError(
            f"tournament {tournament_id} has not finished: only finished tournaments archive"
        )
    end = next(e for e in events if e.type == TournamentFinished.TYPE)
    return TournamentEntry(
        tournament_id=tournament_id,
        name=state.name,
        rules=state.rules,
        format=state.format,
        finished=float(end.time),
        events=last.version,
        head=last.hash,
        summary=summary(state),
        archived=float(archived),
    )


def prepare(record: TournamentRecord, archived: float) -> Row[TournamentEntry]:
    """The row of a record (the checks of ``entry_of``, the text packed, and its chain checked
    as read back from the text: every hash must recompute from what is stored): the CPU's part
    of storing it, apart from the database's, so a caller may do it off the event loop."""
    entry = entry_of(record, archived)
    text = dumps(record)
    back = loads(text)
    if verify_chain(back.events, game_id=record.tournament_id) is not None:
        raise ArchiveError(
            f"tournament {record.tournament_id}: an event does not come back from its record "
            "exactly (a NaN or bytes in its data?)"
        )
    blob, digest = seal(text)
    return Row(entry, blob, digest, tuple(event.hash for event in record.events))


def unpack(tournament_id: str, blob: bytes, digest: str) -> TournamentRecord:
    """The record stored as ``blob``; :class:`ArchiveError` if it is not the text stored."""
    record = loads(unseal(f"tournament {tournament_id}", blob, digest))
    if record.tournament_id != tournament_id:
        raise ArchiveError(
            f"the record archived as {tournament_id} is tournament {record.tournament_id}"
        )
    return record
