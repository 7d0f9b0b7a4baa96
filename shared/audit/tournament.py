"""The audit of one tournament: its own log's chain, every table's game, and every standing
recomputed from the games and the rulings.

Pure, like ``shared.audit.verify``: it is given the tournament's log (stored forms, as read
from its store), the head the store claims, and each table's game as its store or the archive
holds it (or why it could not be read). The checks:

``chain`` / ``head``
    the tournament log's hash chain and head, exactly as a game's (``verify.check_chain``).
``events``
    every entry decodes to a tournament event, and each table's game id is the one derived from
    the tournament, round and table (``tables.table_game_id``).
``games``
    every finished table's game passes every check of ``rummy audit``.
``tables``
    each ``TableFinished`` is recomputed from its game's log: who sat where, the ``MatchEnded``
    (or ``GameCancelled``: no results) and the head it was read at, which must be an event of
    the game's chain at or after the game's end.
``standings``
    every ``StandingsRecorded`` and ``TournamentFinished`` is recomputed with the core's
    ``standings`` from the recomputed table results and the rulings, and every event that
    changes the standings (a round's last table, a ruling) is followed by the standings it makes.

A tampered table result fails ``tables`` even when the tournament chain was rewritten to hold,
and the standings it fed fail ``standings``, each difference naming round, table, entrant and
field with the recorded and the recomputed value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shared.audit.source import StoredGame
from shared.audit.verdicts import Audit, Verdict
from shared.audit.verify import audit_log, check_chain, check_head
from shared.core import events as game_events
from shared.infra import codec
from shared.infra.stored import StoredEvent
from shared.tournament import events as tev
from shared.tournament.standings import standings
from shared.tournament.state import Tournament, evolve
from shared.tournament.tables import seated_players, table_game_id, table_result

CHECKS = ("chain", "head", "events", "games", "tables", "standings")
RESULT_FIELDS = ("player", "seat", "winner", "total", "outs", "wins")
STANDING_FIELDS = (
    "rank",
    "name",
    "score",
    "keys",
    "tables",
    "byes",
    "forfeits",
    "withdrawn",
    "notes",
)

GameSource = StoredGame | str
"""A table's game as read (from the store or the archive), or why it could not be read."""


@dataclass(frozen=True, slots=True)
class Difference:
    """One thing the log says that its sources do not: where (the tournament log's
    ``version``, the round, table, game, entrant and field) and both values."""

    check: str
    message: str
    version: int | None = None
    round: int | None = None
    table: int | None = None
    game_id: str | None = None
    player: str | None = None
    field: str | None = None
    recorded: Any = None
    recomputed: Any = None

    def to_json(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def where(self) -> str:
        """``round 2 table 3 player p seat field total`` as far as known."""
        parts = [f"version {self.version}" if self.version is not None else ""]
        parts.append(f"round {self.round}" if self.round is not None else "")
        parts.append(f"table {self.table}" if self.table is not None else "")
        parts.append(f"entrant {self.player}" if self.player is not None else "")
        parts.append(f"field {self.field}" if self.field is not None else "")
        return ", ".join(p for p in parts if p)


@dataclass(frozen=True)
class TournamentAudit:
    """Every verdict on one tournament, each difference found, and each table game's audit."""

    tournament_id: str
    events: int
    head: tuple[int, str] | None
    verdicts: tuple[Verdict, ...]
    differences: tuple[Difference, ...]
    games: tuple[tuple[int, int, Audit], ...]  # (round, table, audit)

    @property
    def ok(self) -> bool:
        return not any(v.failed for v in self.verdicts)

    def verdict(self, check: str) -> Verdict:
        return next(v for v in self.verdicts if v.check == check)

    def to_json(self) -> dict[str, Any]:
        return {
            "tournament_id": self.tournament_id,
            "events": self.events,
            "head": None if self.head is None else {"version": self.head[0], "hash": self.head[1]},
            "ok": self.ok,
            "verdicts": [v.to_json() for v in self.verdicts],
            "differences": [d.to_json() for d in self.differences],
            "games": [{"round": r, "table": t} | audit.to_json() for r, t, audit in self.games],
        }


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


# --- one table, recomputed from its game --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Read:
    """What a finished game says about its table: who sat where, its results and the head."""

    seats: tuple[str, ...]
    results: tuple[tev.SeatResult, ...]
    head: tuple[int, str]
    ended: int  # the version of its MatchEnded or GameCancelled


def _domain(events: Sequence[StoredEvent]) -> list[game_events.Event]:
    out = []
    for stored in events:
        current = codec.UPCASTERS.upcast(stored)
        out.append(game_events.event_from(current.type, current.data))
    return out


def read_table(game: StoredGame, head: tuple[int, str] | None) -> _Read | str:
    """The table's results as its game's log gives them, read up to ``head`` (the recorded
    one) when that is a point of the chain at or after the game's end, else up to the game's
    end; a string saying why when the game has not ended or cannot be read."""
    try:
        domain = _domain(game.events)
    except (codec.CodecError, game_events.UnknownEvent, TypeError, ValueError) as err:
        return f"its log cannot be read: {err}"
    ended = next(
        (
            i
            for i, e in enumerate(domain)
            if isinstance(e, game_events.MatchEnded | game_events.GameCancelled)
        ),
        None,
    )
    if ended is None:
        return "its log has no MatchEnded or GameCancelled: the game has not ended"
    end = game.events[ended].version
    at = game.events[-1]
    if head is not None:
        pinned = next((e for e in game.events if e.version == head[0]), None)
        if pinned is not None and pinned.hash == head[1] and pinned.version >= end:
            at = pinned
    upto = [e for e, s in zip(domain, game.events, strict=True) if s.version <= at.version]
    seats = seated_players(upto)
    final = domain[ended]
    results: tuple[tev.SeatResult, ...] = ()
    if isinstance(final, game_events.MatchEnded):
        try:
            results = table_result(seats, final)
        except ValueError as err:
            return f"its MatchEnded does not fit its seats: {err}"
    return _Read(seats, results, (at.version, at.hash), end)


def _head_difference(
    game: StoredGame, recorded: tuple[int, str], read: _Read, where: dict[str, Any]
) -> Difference | None:
    """The recorded head must name an event of the game's chain at or after its end."""
    pinned = next((e for e in game.events if e.version == recorded[0]), None)
    if pinned is not None and pinned.hash == recorded[1] and pinned.version >= read.ended:
        return None
    if pinned is None:
        why = f"the game's log has no version {recorded[0]}"
    elif pinned.hash != recorded[1]:
        why = f"version {recorded[0]} of the game hashes to {pinned.hash[:12]}…"
    else:
        why = f"version {recorded[0]} is before the game's end at version {read.ended}"
    return Difference(
        "tables",
        f"the recorded head {recorded[0]}:{recorded[1][:12]}… is not the game's: {why}",
        field="head",
        recorded=list(recorded),
        recomputed=list(read.head),
        **where,
    )


def _result_differences(
    recorded: Sequence[tev.SeatResult],
    recomputed: Sequence[tev.SeatResult],
    where: dict[str, Any],
) -> list[Difference]:
    if len(recorded) != len(recomputed):
        return [
            Difference(
                "tables",
                f"{len(recorded)} result lines are recorded; the game gives {len(recomputed)}",
                field="results",
                recorded=len(recorded),
                recomputed=len(recomputed),
                **where,
            )
        ]
    out = []
    for mine, theirs in zip(recorded, recomputed, strict=True):
        for name in RESULT_FIELDS:
            a, b = getattr(mine, name), getattr(theirs, name)
            if a != b:
                out.append(
                    Difference(
                        "tables",
                        f"seat {theirs.seat} ({theirs.player}): {name} is recorded as {a!r}; "
                        f"the game's log gives {b!r}",
                        player=theirs.player,
                        field=name,
                        recorded=a,
                        recomputed=b,
                        **where,
                    )
                )
    return out


# --- standings ----------------------------------------------------------------------------------


def _standing_differences(
    recorded: Sequence[tev.Standing],
    recomputed: Sequence[tev.Standing],
    where: dict[str, Any],
    what: str,
) -> list[Difference]:
    mine = {row.player: row for row in recorded}
    theirs = {row.player: row for row in recomputed}
    out = []
    for player in [*theirs, *(p for p in mine if p not in theirs)]:
        if player not in mine or player not in theirs:
            out.append(
                Difference(
                    "standings",
                    f"{what}: entrant {player} has "
                    + ("no row recorded" if player not in mine else "a row but is no entrant"),
                    player=player,
                    field="row",
                    recorded=player in mine,
                    recomputed=player in theirs,
                    **where,
                )
            )
            continue
        for name in STANDING_FIELDS:
            a, b = getattr(mine[player], name), getattr(theirs[player], name)
            if a != b:
                out.append(
                    Difference(
                        "standings",
                        f"{what}: entrant {player}'s {name} is recorded as {_plain(a)!r}; "
                        f"recomputed {_plain(b)!r}",
                        player=player,
                        field=name,
                        recorded=_plain(a),
                        recomputed=_plain(b),
                        **where,
                    )
                )
    return out


def _counted(state: Tournament) -> int:
    """The last round the standings count (as ``decide`` records them)."""
    return state.current if state.round_over() else state.current - 1


# --- the walk -----------------------------------------------------------------------------------


@dataclass
class _Walk:
    """The log replayed with every table's results taken from its game."""

    tournament_id: str
    games: Mapping[str, GameSource]
    state: Tournament = dataclasses.field(default_factory=Tournament)
    found: list[Difference] = dataclasses.field(default_factory=list)
    audits: list[tuple[int, int, Audit]] = dataclasses.field(default_factory=list)
    due: tuple[int, int, str] | None = None  # (version, round, why) of standings not yet seen
    final_due: int | None = None  # version after which a TournamentFinished must follow
    tables: int = 0
    recorded_standings: int = 0

    def note(self, difference: Difference) -> None:
        self.found.append(difference)

    def step(self, version: int, event: tev.Event) -> None:
        if self.due is not None and not isinstance(event, tev.StandingsRecorded):
            self._missing_standings()
        if self.final_due is not None and not isinstance(event, tev.TournamentFinished):
            self._missing_final()
        match event:
            case tev.RoundPaired():
                for seated in event.tables:
                    derived = table_game_id(self.tournament_id, event.round, seated.table)
                    if seated.game_id != derived:
                        self.note(
                            Difference(
                                "events",
                                f"round {event.round} table {seated.table}'s game id is not "
                                f"the one derived from the tournament, round and table",
                                version,
                                event.round,
                                seated.table,
                                seated.game_id,
                                field="game_id",
                                recorded=seated.game_id,
                                recomputed=derived,
                            )
                        )
                self.state = evolve(self.state, event)
            case tev.TableFinished():
                self._table_finished(version, event)
            case tev.RulingRecorded():
                self.state = evolve(self.state, event)
                counted = _counted(self.state)
                if counted >= 1:
                    why = (
                        f"the {event.kind} ruling on round {event.round} table {event.table} "
                        f"({event.reason})"
                    )
                    self.due = (version, counted, why)
            case tev.StandingsRecorded():
                self._standings(version, event)
            case tev.TournamentFinished():
                self.final_due = None
                self.recorded_standings += 1
                self.found += _standing_differences(
                    event.standings,
                    standings(self.state),
                    {"version": version},
                    "the final standings",
                )
                self.state = evolve(self.state, event)
            case _:
                self.state = evolve(self.state, event)

    def _missing_standings(self) -> None:
        assert self.due is not None
        version, number, why = self.due
        self.note(
            Difference(
                "standings",
                f"{why} at version {version} changes the standings after round {number}, but "
                "no StandingsRecorded follows it",
                version,
                number,
                field="StandingsRecorded",
                recorded=None,
                recomputed=number,
            )
        )
        self.due = None

    def _missing_final(self) -> None:
        self.note(
            Difference(
                "standings",
                f"the tournament is over but the standings recorded at version {self.final_due} "
                "are not followed by its TournamentFinished",
                self.final_due,
                field="TournamentFinished",
            )
        )
        self.final_due = None

    def _table_finished(self, version: int, event: tev.TableFinished) -> None:
        where: dict[str, Any] = {
            "version": version,
            "round": event.round,
            "table": event.table,
            "game_id": event.game_id,
        }
        table = self.state.table(event.round, event.table)
        if table is None:
            self.note(Difference("events", "TableFinished names a table never paired", **where))
            return
        before = self.state
        if table.game_id != event.game_id:
            self.note(
                Difference(
                    "tables",
                    f"TableFinished names game {event.game_id}; the table was paired with "
                    f"{table.game_id}",
                    field="game_id",
                    recorded=event.game_id,
                    recomputed=table.game_id,
                    **where,
                )
            )
        self.tables += 1
        truth = event
        source = self.games.get(table.game_id, "it was not read")
        if isinstance(source, str):
            self.note(
                Difference(
                    "games",
                    f"game {table.game_id} cannot be read ({source}): this table's result "
                    "cannot be checked",
                    **(where | {"game_id": table.game_id}),
                )
            )
        else:
            audit = audit_log(
                source.events, game_id=source.game_id, head=source.head, defects=source.defects
            )
            self.audits.append((event.round, event.table, audit))
            if not audit.ok:
                bad = audit.first_bad()
                assert bad is not None
                self.note(
                    Difference(
                        "games",
                        f"game {table.game_id} fails its audit: {bad.check} at version "
                        f"{bad.version} ({bad.message})",
                        field=bad.check,
                        **(where | {"game_id": table.game_id}),
                    )
                )
            read = read_table(source, event.head)
            if isinstance(read, str):
                self.note(
                    Difference("tables", f"game {table.game_id}: {read}", field="results", **where)
                )
            else:
                if read.seats != table.seats:
                    self.note(
                        Difference(
                            "tables",
                            "the game seated others than the table was paired with",
                            field="seats",
                            recorded=list(table.seats),
                            recomputed=list(read.seats),
                            **where,
                        )
                    )
                self.found += _result_differences(event.results, read.results, where)
                wrong_head = _head_difference(source, event.head, read, where)
                if wrong_head is not None:
                    self.note(wrong_head)
                truth = dataclasses.replace(event, results=read.results, head=read.head)
        self.state = evolve(self.state, truth)
        if self.state.played[event.round - 1].over and event.round == before.current:
            self.due = (version, event.round, f"round {event.round}'s last table, {event.table},")

    def _standings(self, version: int, event: tev.StandingsRecorded) -> None:
        self.recorded_standings += 1
        expected = self.due[1] if self.due is not None else _counted(self.state)
        if self.due is None:
            self.note(
                Difference(
                    "standings",
                    f"standings after round {event.round} are recorded with nothing before them "
                    "that changes the standings",
                    version,
                    event.round,
                    field="StandingsRecorded",
                )
            )
        elif event.round != expected:
            self.note(
                Difference(
                    "standings",
                    f"the standings are recorded as after round {event.round}; the rounds over "
                    f"are 1 to {expected}",
                    version,
                    event.round,
                    field="round",
                    recorded=event.round,
                    recomputed=expected,
                )
            )
        self.due = None
        self.found += _standing_differences(
            event.standings,
            standings(self.state),
            {"version": version, "round": event.round},
            f"the standings after round {event.round}",
        )
        self.state = evolve(self.state, event)
        if self.state.status == "finished":
            self.final_due = version


def _decode(
    log: Sequence[StoredEvent],
) -> tuple[list[tuple[int, tev.Event]], list[Difference]]:
    decoded: list[tuple[int, tev.Event]] = []
    bad: list[Difference] = []
    for stored in log:
        form = stored.stored_form()
        try:
            decoded.append((form.version, tev.event_from(form.type, dict(form.data))))
        except tev.UnknownEvent as err:
            bad.append(Difference("events", str(err), form.version, field="type"))
    return decoded, bad


def _verdict(check: str, found: Sequence[Difference], ok: str) -> Verdict:
    mine = [d for d in found if d.check == check]
    if not mine:
        return Verdict(check, "ok", ok)
    first = mine[0]
    located = [d.version for d in mine if d.version is not None]
    return Verdict(
        check,
        "failed",
        f"{len(mine)} difference(s); the first: {first.message}",
        min(located) if located else None,
    )


def audit_tournament(
    log: Sequence[StoredEvent],
    games: Mapping[str, GameSource],
    *,
    tournament_id: str,
    head: tuple[int, str] | None,
    defects: Sequence[tuple[int, str]] = (),
) -> TournamentAudit:
    """Every check on one tournament. ``games`` maps each finished table's game id to its game
    (``table_games`` lists the ids to read)."""
    chain = check_chain(log, tournament_id, defects)
    head_verdict = check_head(log, head)
    decoded, found = _decode(log)
    found = [
        Difference(v.check, f"the tournament log: {v.message}", v.version)
        for v in (chain, head_verdict)
        if v.failed
    ] + found
    walk = _Walk(tournament_id, games, found=found)
    for version, event in decoded:
        walk.step(version, event)
    if walk.due is not None:
        walk._missing_standings()
    if walk.final_due is not None:
        walk._missing_final()
    verdicts = (
        chain,
        head_verdict,
        _verdict("events", walk.found, f"{len(decoded)} tournament events decode"),
        _verdict("games", walk.found, f"{len(walk.audits)} table games pass every check"),
        _verdict("tables", walk.found, f"{walk.tables} table results recomputed from their games"),
        _verdict(
            "standings",
            walk.found,
            f"{walk.recorded_standings} standings recomputed from the tables and the rulings",
        ),
    )
    return TournamentAudit(
        tournament_id, len(log), head, verdicts, tuple(walk.found), tuple(walk.audits)
    )


def table_games(log: Sequence[StoredEvent]) -> tuple[str, ...]:
    """The game ids of the tables the log pairs or records as finished (what the audit needs
    read), in log order."""
    ids: dict[str, None] = {}
    for stored in log:
        form = stored.stored_form()
        if form.type == tev.TableFinished.TYPE:
            ids[str(form.data.get("game_id"))] = None
        elif form.type == tev.RoundPaired.TYPE:
            for seated in form.data.get("tables", []):
                if isinstance(seated, dict):
                    ids[str(seated.get("game_id"))] = None
    return tuple(ids)
