"""The walk over a game's events behind the ``replay``, ``seed`` and ``scores`` verdicts of the
audit (see ``shared.audit.verify`` for what each one checks): every recorded outcome re-derived
by the rules engine itself, so that the audit holds no rules of its own.

The log records what commands did, not the commands. The walk reads each command back from the
first event it made (:func:`command_of`: a play from its layout, a draw from ``CardDrawn``, a
timeout from ``TurnTimedOut``...), decides it with ``shared.core.decide`` on the state the
events before it fold to, at the time recorded for it, and checks that the events recorded next
are the decided ones; then it folds the recorded events with ``evolve`` and goes on.

The shuffle: every command is decided with the orders the log records
(``shared.core.dealing.RecordedShuffle``), so a live game's rules are all checked while its seed
is still secret; once the revealed seed hashes to the commitment, each command is decided with
the seed as the service decided it, and where that differs from the recorded orders' decision the
seed's verdict fails. What the engine cannot check stays here: the seed against its commitment,
and the score sheets, which the scoring service computes (``decide`` only accepts or refuses
them; the message names the pure score sheet).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace

from shared.audit.replay import group_of
from shared.audit.verdicts import Verdict, short
from shared.core.cards import cards_str
from shared.core.codes import Rejection
from shared.core.commands import (
    Cancel,
    Command,
    Context,
    Continue,
    CreateGame,
    Discard,
    Draw,
    End,
    Expire,
    Leave,
    OfferRematch,
    Pass,
    Play,
    RecordScores,
    Resign,
    Return,
    Sit,
    Start,
    Timeout,
)
from shared.core.dealing import RecordedShuffle
from shared.core.decide import decide, round_sheet
from shared.core.events import (
    CardDiscarded,
    CardDrawn,
    CommandRejected,
    Event,
    GameCancelled,
    GameCreated,
    GameStarted,
    MatchEnded,
    PlayerSeated,
    RematchOffered,
    RoundDealt,
    RoundEnded,
    ScoresRecorded,
    SeatLeft,
    SeatResigned,
    SeatReturned,
    SeedRevealed,
    StarterChosen,
    StockReshuffled,
    TurnPassed,
    TurnPlayed,
    TurnStarted,
    TurnTimedOut,
    event_from,
)
from shared.core.evolve import evolve
from shared.core.scoring import ScoringError
from shared.core.shuffle import commitment
from shared.core.state import GameState
from shared.infra import codec
from shared.infra.chain import event_salt
from shared.infra.stored import StoredEvent

Decided = list[Event] | Rejection | Exception
MAX_OUTCOME = 16  # more events than one command makes: where its shuffle outcomes are sought
SCORING_EVENTS = (ScoresRecorded, MatchEnded)


@dataclass
class _Check:
    """The running outcome of one check during the walk."""

    name: str
    failure: tuple[int, str] | None = None
    notes: list[str] = field(default_factory=list)

    def fail(self, version: int, why: str) -> None:
        if self.failure is None:
            self.failure = (version, why)


def _cards(cards: Sequence[int]) -> str:
    return " ".join(cards_str(cards)) or "nothing"


def _melds(melds: Sequence[Sequence[int]]) -> str:
    return " | ".join(_cards(m) for m in melds) or "an empty table"


# --- the commands the log records ----------------------------------------------------------------


def command_of(
    state: GameState, events: Sequence[Event], index: int, game_id: str
) -> Command | None:
    """The command whose outcome begins with ``events[index]`` (None: no command begins with such
    an event). A play is read from its layout: an accepted play records the table it made (the
    canonical form of the one proposed, which the rules core judges the same), a rejected attempt
    the layout proposed. A draw's card is not part of the command: the rules take it from the
    stock (or the pile) of the state."""
    event = events[index]
    turn = state.turn
    if isinstance(event, GameCreated):
        return CreateGame(
            game_id,
            event.rules,
            event.options,
            event.seats,
            event.commitment,
            event.rematch_of,
            event.tournament,
        )
    if isinstance(event, PlayerSeated):
        return Sit(event.name, event.seed, event.bot, event.seat, event.player)
    if isinstance(event, SeatLeft):
        return Leave(event.seat)
    if isinstance(event, SeatResigned):
        # A seat resigned for being absent is part of its timeout's outcome (Decision 17).
        return Resign(event.seat) if event.reason == "resigned" else None
    if isinstance(event, SeatReturned):
        return Return(event.seat, event.reason)
    if isinstance(event, GameCancelled):
        return Cancel() if event.reason == "host" else Expire()
    if isinstance(event, RematchOffered):
        return OfferRematch(event.seat, event.game_id)
    if isinstance(event, GameStarted):
        return Start()
    if isinstance(event, TurnPlayed):
        return Play(event.seat, event.layout)
    if isinstance(event, CommandRejected):
        if event.command == "play" and event.layout is not None:
            return Play(event.seat, event.layout)
        return None
    if isinstance(event, CardDrawn):
        return Draw(event.seat, event.source)
    if isinstance(event, StockReshuffled):
        after = events[index + 1] if index + 1 < len(events) else None
        seat = after.seat if isinstance(after, CardDrawn) else turn.seat if turn else 0
        return Draw(seat, "stock")
    if isinstance(event, CardDiscarded):
        return Discard(event.seat, event.card)
    if isinstance(event, TurnPassed):
        return Pass(event.seat)
    if isinstance(event, TurnTimedOut):
        return Timeout(event.number, event.reason)
    if isinstance(event, TurnStarted):
        return End(turn.seat if turn is not None else event.seat)
    if isinstance(event, ScoresRecorded):
        return RecordScores(event.round, event.winner, event.went_out, event.seats, event.scores)
    if isinstance(event, RoundDealt | MatchEnded):
        return Continue()
    return None


def _bot(actor: str | None) -> str | None:
    """The bot an event's actor names (``bot:<name>``: a bot's move), or None."""
    if actor is None or not actor.startswith("bot:"):
        return None
    return actor[len("bot:") :]


def _what(command: Command) -> str:
    """The command in words, for a verdict's message."""
    if isinstance(command, CreateGame):
        return "the game's creation"
    if isinstance(command, Sit):
        return f"seating {command.name!r}"
    if isinstance(command, Start):
        return "the start"
    if isinstance(command, Play):
        return f"the play by seat {command.seat}"
    if isinstance(command, Draw):
        return f"the draw by seat {command.seat} from the {command.source}"
    if isinstance(command, End):
        return f"the end of seat {command.seat}'s turn"
    if isinstance(command, Pass):
        return f"the pass by seat {command.seat}"
    if isinstance(command, Discard):
        return f"the discard of {_cards([command.card])} by seat {command.seat}"
    if isinstance(command, Timeout):
        return f"the timeout of turn {command.number}"
    if isinstance(command, RecordScores):
        return f"the score sheet of round {command.round}"
    if isinstance(command, Leave):
        return f"seat {command.seat} leaving"
    if isinstance(command, Resign):
        return f"seat {command.seat}'s resignation"
    if isinstance(command, Return):
        return f"seat {command.seat}'s return"
    if isinstance(command, Cancel | Expire):
        return "the game's cancellation"
    if isinstance(command, OfferRematch):
        return f"the rematch offered by seat {command.seat}"
    return "the next deal or the match's end"


def _same(decided: Event, recorded: Event) -> bool:
    """Equal outcomes. The seed a ``SeedRevealed`` shows is the seed check's (against the
    commitment); a rejected attempt's rules-core code and sentence may be worded differently by
    today's rules core (a note, not a failure)."""
    if type(decided) is not type(recorded):
        return False
    if isinstance(decided, SeedRevealed):
        return True
    if isinstance(decided, TurnPlayed) and isinstance(recorded, TurnPlayed):
        return _in_order(decided) == _in_order(recorded)
    if isinstance(decided, CommandRejected) and isinstance(recorded, CommandRejected):
        key = (decided.seat, decided.command, decided.code, decided.layout)
        return key == (recorded.seat, recorded.command, recorded.code, recorded.layout)
    return decided == recorded


def _in_order(play: TurnPlayed) -> TurnPlayed:
    """The play with its played and returned cards sorted (their order says nothing)."""
    return replace(play, played=tuple(sorted(play.played)), to_hand=tuple(sorted(play.to_hand)))


def _first_difference(
    decided: Sequence[Event], recorded: Sequence[Event], start: int = 0
) -> int | None:
    """The first position where the decided events and the recorded ones from ``start`` differ
    (None: they agree as far as both go; a log may end within one command's events)."""
    for k, mine in enumerate(decided):
        if start + k >= len(recorded):
            return None
        if not _same(mine, recorded[start + k]):
            return k
    return None


# --- the walk ------------------------------------------------------------------------------------


class _Walk:
    """One pass over the events: decides every command again and folds what was recorded."""

    def __init__(self, game_id: str, events: Sequence[StoredEvent]) -> None:
        self.game_id = game_id
        self.stored = events
        self.events: list[Event] = []
        self.replay = _Check("replay")
        self.seed = _Check("seed")
        self.scores = _Check("scores")
        self.state = GameState()
        self.stopped_at: int | None = None
        self.secret: bytes | None = None  # the revealed seed, once it hashes to the commitment
        self.shown = b""  # the revealed seed's bytes, whatever it is (what a reveal re-makes)
        self.reveal: tuple[int, str] | None = None
        self.salts = 0  # salted events, each checked against the revealed seed
        self.counts = dict.fromkeys(
            (
                "commands",
                "plays",
                "rejected",
                "draws",
                "timeouts",
                "deals",
                "reshuffles",
                "starters",
                "sheets",
                "matches",
            ),
            0,
        )

    # -- driver --

    def run(self) -> None:
        self._prepare_seed()
        for stored in self.stored:
            try:
                current = codec.UPCASTERS.upcast(stored)
                self.events.append(event_from(current.type, current.data))
            except ValueError as err:  # CodecError, UnknownEvent
                version = stored.version
                self.replay.fail(version, f"version {version} is not a known event: {err}")
                self.stopped_at = version
                break
        index = 0
        while index < len(self.events):
            try:
                end = self._command(index)
            except Exception as err:  # facts of the wrong shape, even for a message about them
                version = self.stored[index].version
                self.replay.fail(
                    version,
                    f"version {version} ({self.events[index].TYPE}) holds malformed facts: {err!r}",
                )
                end = group_of(self.stored, index)[1]
            for k in range(index, end):
                event, version = self.events[k], self.stored[k].version
                self._count(event)
                try:
                    self.state = evolve(self.state, event)
                except Exception as err:
                    self.replay.fail(
                        version, f"version {version} ({event.TYPE}) cannot be applied: {err!r}"
                    )
                    self.stopped_at = version
                    return
            index = end

    def _prepare_seed(self) -> None:
        reveals = [e for e in self.stored if e.type == "SeedRevealed"]
        if not reveals:
            return
        last = codec.UPCASTERS.upcast(reveals[-1])
        seed = last.data.get("seed")
        self.reveal = (last.version, seed if isinstance(seed, str) else "")
        created = self.stored[0].data if self.stored else {}
        promised = created.get("commitment") if self.stored[0].type == "GameCreated" else None
        try:
            raw = bytes.fromhex(self.reveal[1])
        except ValueError:
            self.seed.fail(last.version, f"the revealed seed {self.reveal[1]!r} is not hex")
            return
        self.shown = raw
        if not self.reveal[1] or commitment(raw) != promised:
            self.seed.fail(
                last.version,
                f"the seed revealed at version {last.version} hashes to "
                f"{short(commitment(raw))}, but GameCreated (version 1) committed to "
                f"{short(str(promised))}: it is not the committed seed",
            )
            return
        self.secret = raw
        for event in self.stored:
            stored = event.stored_form()
            if stored.salt is None:
                continue
            self.salts += 1
            expected = event_salt(raw, stored.game_id, stored.version)
            if stored.salt != expected:
                self.seed.fail(
                    stored.version,
                    f"the salt of version {stored.version} is {stored.salt}, but the revealed "
                    f"seed makes it {expected}: the salts were not made from this seed",
                )
                return

    def _count(self, event: Event) -> None:
        kinds: dict[type[Event], str] = {
            TurnPlayed: "plays",
            CommandRejected: "rejected",
            CardDrawn: "draws",
            TurnTimedOut: "timeouts",
            RoundDealt: "deals",
            StockReshuffled: "reshuffles",
            StarterChosen: "starters",
            ScoresRecorded: "sheets",
            MatchEnded: "matches",
        }
        kind = kinds.get(type(event))
        if kind is not None:
            self.counts[kind] += 1

    def _version(self, index: int) -> int:
        """The version of ``events[index]``, or the one after the log's last."""
        if index < len(self.events):
            return self.stored[index].version
        return self.stored[len(self.events) - 1].version + 1

    def _decide(self, command: Command, ctx: Context) -> Decided:
        try:
            return decide(self.state, command, ctx)
        except Exception as err:  # a state no rules made (the log was edited): say so
            return err

    # -- one command --

    def _command(self, index: int) -> int:
        """Check the command whose events begin at ``index``; return where the next one begins."""
        state, events = self.state, self.events
        version = self.stored[index].version
        command = command_of(state, events, index, self.game_id)
        if command is None:
            first = events[index]
            self.replay.fail(
                version,
                f"version {version} ({first.TYPE}) begins no command: the rules make it only "
                "as part of another command's outcome",
            )
            return group_of(self.stored, index)[1]
        self.counts["commands"] += 1
        now = self.stored[index].time
        bot = _bot(self.stored[index].actor)
        seeded: Decided | None = None
        if self.secret is not None:
            seeded = self._decide(command, Context(now, self.secret, bot=bot))
            if isinstance(seeded, list) and _first_difference(seeded, events, index) is None:
                self._notes(seeded, index)
                return min(index + len(seeded), len(events))
        ahead = self._ahead(index)
        decided = self._decide(command, Context(now, self.shown, RecordedShuffle(ahead), bot=bot))
        if isinstance(seeded, list) and isinstance(decided, list):
            k = _first_difference(seeded, decided)
            if k is not None:
                self._seed_failure(index + k, seeded[k])
        return self._compare(index, command, decided)

    def _ahead(self, index: int) -> list[Event]:
        """The events from ``index`` that one command's outcome may span: where its cut, deal or
        reshuffle is recorded."""
        return self.events[index : index + MAX_OUTCOME]

    def _compare(self, index: int, command: Command, decided: Decided) -> int:
        """Fail a check unless ``decided`` is what was recorded from ``index`` on."""
        version = self.stored[index].version
        after = group_of(self.stored, index)[1]
        what = _what(command)
        if isinstance(decided, Exception):
            if isinstance(decided, ScoringError) and isinstance(command, RecordScores):
                self.scores.fail(version, f"round {command.round} cannot be scored: {decided}")
            elif isinstance(decided, ScoringError | AssertionError) and isinstance(
                command, Continue
            ):
                self.scores.fail(
                    version,
                    f"the score sheets before version {version} do not make a match: {decided}",
                )
            else:
                self.replay.fail(
                    version,
                    f"{what} at version {version} cannot be decided on the state before it: "
                    f"{decided!r}",
                )
            return after
        if isinstance(decided, Rejection):
            if decided.code == "scores_wrong" and isinstance(command, RecordScores):
                self.scores.fail(version, self._sheet_message(command, version))
            else:
                self.replay.fail(
                    version,
                    f"{what} at version {version} is refused by the rules ({decided.code}): "
                    f"{decided.message}",
                )
            return after
        k = _first_difference(decided, self.events, index)
        self._notes(decided, index)
        if k is None:
            return min(index + len(decided), len(self.events))
        mine, theirs = decided[k], self.events[index + k]
        where = self._version(index + k)
        why = self._difference(mine, theirs, where, what)
        if isinstance(mine, SCORING_EVENTS) or isinstance(theirs, SCORING_EVENTS):
            self.scores.fail(where, why)
        else:
            self.replay.fail(where, why)
        return max(after, index + k + 1)

    def _notes(self, decided: Sequence[Event], index: int) -> None:
        recorded = self.events[index : index + len(decided)]
        for k, (mine, theirs) in enumerate(zip(decided, recorded, strict=False)):
            if (
                isinstance(mine, CommandRejected)
                and isinstance(theirs, CommandRejected)
                and mine.detail != theirs.detail
            ):
                self.replay.notes.append(
                    f"version {self._version(index + k)}: rejected as {theirs.detail}, today's "
                    f"rules core says {mine.detail}"
                )

    # -- messages --

    def _sheet_message(self, command: RecordScores, version: int) -> str:
        state = self.state
        last = state.rounds[-1]
        try:
            sheet = round_sheet(state.rules, last)
        except ScoringError as err:
            return f"round {last.round} cannot be scored: {err}"
        return (
            f"the score sheet of round {command.round} at version {version} says winner "
            f"{command.winner}, scores {command.scores}; round {last.round}'s facts give winner "
            f"{sheet.winner}, scores {sheet.scores}"
        )

    def _difference(self, mine: Event, theirs: Event, version: int, what: str) -> str:
        """Why the recorded ``theirs`` is not the decided ``mine`` (at ``version``)."""
        state = self.state
        if isinstance(theirs, TurnPlayed) and isinstance(mine, CommandRejected):
            return (
                f"the play at version {version} by seat {theirs.seat}: re-judged illegal "
                f"({mine.detail}): {mine.reason}"
            )
        if isinstance(theirs, CommandRejected) and isinstance(mine, TurnPlayed):
            return (
                f"the attempt rejected at version {version} ({theirs.detail}) is legal by "
                f"today's rules core: {_melds(theirs.layout or ())} from seat {theirs.seat}'s "
                "hand"
            )
        if isinstance(theirs, RoundDealt) and isinstance(mine, MatchEnded):
            return (
                f"round {theirs.round} is dealt at version {version}, but the match was over "
                f"(won by seat(s) {list(mine.winners)})"
            )
        if isinstance(theirs, MatchEnded) and isinstance(mine, RoundDealt):
            return f"the match ends at version {version}, but by its score sheets it is not over"
        if type(mine) is not type(theirs):
            return (
                f"version {version} records {theirs.TYPE}, but the rules make {mine.TYPE} "
                f"there ({_brief(mine)}) as the outcome of {what}"
            )
        if isinstance(mine, TurnPlayed) and isinstance(theirs, TurnPlayed):
            return f"the play at version {version} by seat {theirs.seat}: " + _play_difference(
                mine, theirs
            )
        if isinstance(mine, CardDrawn) and isinstance(theirs, CardDrawn):
            return _draw_difference(state, mine, theirs, version)
        if isinstance(mine, TurnStarted) and isinstance(theirs, TurnStarted):
            if mine.seat != theirs.seat:
                return (
                    f"turn {theirs.number} at version {version} goes to seat {theirs.seat}, but "
                    f"it was seat {mine.seat}'s turn"
                )
            if mine.number != theirs.number:
                return (
                    f"turn {theirs.number} starts at version {version}, after turn "
                    f"{mine.number - 1}"
                )
            return (
                f"turn {theirs.number} at version {version} has deadline {theirs.deadline}, not "
                f"{mine.deadline} ({state.rules.turn_seconds} seconds after it started)"
            )
        if isinstance(mine, RoundDealt) and isinstance(theirs, RoundDealt):
            return _deal_difference(mine, theirs, version)
        if isinstance(mine, RoundEnded) and isinstance(theirs, RoundEnded):
            return _end_difference(mine, theirs, version)
        if isinstance(mine, StockReshuffled):
            return (
                f"the reshuffle at version {version} is not the pile under its top card added "
                "to the stock"
            )
        if isinstance(mine, MatchEnded) and isinstance(theirs, MatchEnded):
            return (
                f"MatchEnded at version {version} says winners {list(theirs.winners)}, totals "
                f"{theirs.totals}; the score sheets give winners {list(mine.winners)}, totals "
                f"{mine.totals}"
            )
        if (
            isinstance(mine, GameCreated)
            and isinstance(theirs, GameCreated)
            and mine.game_id != theirs.game_id
        ):
            return f"GameCreated names game {theirs.game_id!r}, not {mine.game_id!r}"
        if (
            isinstance(mine, PlayerSeated)
            and isinstance(theirs, PlayerSeated)
            and mine.seat != theirs.seat
        ):
            return (
                f"seat {theirs.seat} taken at version {version}, but seat {mine.seat} was the "
                "next free one"
            )
        differing = [
            f.name for f in fields(mine) if getattr(mine, f.name) != getattr(theirs, f.name)
        ]
        return (
            f"{theirs.TYPE} at version {version} differs from what the rules make of {what} in "
            f"{', '.join(differing) or 'its facts'}"
        )

    def _seed_failure(self, index: int, seeded: Event) -> None:
        """The recorded shuffle outcome at ``index`` is not the revealed seed's ``seeded``."""
        version = self._version(index)
        theirs = self.events[index] if index < len(self.events) else None
        if isinstance(seeded, StarterChosen) and isinstance(theirs, StarterChosen):
            why = (
                f"StarterChosen at version {version} is not what rr-shuffle-v1 gives for the "
                f"revealed seed: dealer {seeded.dealer} and starter {seeded.starter} by "
                f"{seeded.draws}, recorded dealer {theirs.dealer} and starter {theirs.starter} by "
                f"{theirs.draws}"
            )
        elif isinstance(seeded, RoundDealt) and isinstance(theirs, RoundDealt):
            what = [
                f"the hand of seat {i}"
                for i, (a, b) in enumerate(zip(seeded.hands, theirs.hands, strict=False))
                if a != b
            ]
            if seeded.stock != theirs.stock:
                what.append("the stock order")
            if seeded.discard != theirs.discard:
                what.append("the pile")
            why = (
                f"round {theirs.round}'s deal at version {version} is not what rr-shuffle-v1 "
                f"gives for the revealed seed: {', '.join(what) or 'its facts'} differ"
            )
        elif isinstance(seeded, StockReshuffled):
            why = (
                f"the reshuffle at version {version} is not what rr-shuffle-v1 gives for the "
                "revealed seed"
            )
        else:
            why = (
                f"{seeded.TYPE} at version {version} is not what the revealed seed makes of the "
                "shuffle before it"
            )
        self.seed.fail(version, why)

    # -- verdicts --

    def verdicts(self) -> tuple[Verdict, Verdict, Verdict]:
        c = self.counts
        replay = self._verdict(
            self.replay,
            f"{len(self.stored)} events fold; {c['commands']} commands decided again by the rules "
            f"engine give the recorded events ({c['plays']} plays, {c['rejected']} rejected "
            f"attempts, {c['draws']} draws, {c['timeouts']} timeouts)",
        )
        if self.seed.failure is None and self.stopped_at is None and self.reveal is None:
            finished = any(e.type == "MatchEnded" for e in self.stored)
            if finished:
                ended = next(e.version for e in self.stored if e.type == "MatchEnded")
                self.seed.fail(
                    ended + 1,
                    f"the match ended at version {ended} but the seed was never revealed: "
                    f"version {ended + 1} should be SeedRevealed",
                )
            else:
                seed = Verdict(
                    "seed",
                    "pending",
                    f"not yet revealed: {c['starters']} starter choice(s), {c['deals']} deal(s) "
                    f"and {c['reshuffles']} reshuffle(s) to check once SeedRevealed is in",
                )
                return replay, seed, self._scores_verdict()
        seed = self._verdict(
            self.seed,
            f"the revealed seed matches the commitment; {c['starters']} starter choice(s), "
            f"{c['deals']} deal(s) and {c['reshuffles']} reshuffle(s) decided again with "
            f"rr-shuffle-v1 are the recorded ones; {self.salts} event salt(s) made from it",
        )
        return replay, seed, self._scores_verdict()

    def _scores_verdict(self) -> Verdict:
        c = self.counts
        ended = " and the match result" if c["matches"] else ""
        return self._verdict(
            self.scores, f"{c['sheets']} score sheet(s){ended} equal the pure scoring of the log"
        )

    def _verdict(self, check: _Check, fine: str) -> Verdict:
        notes = tuple(check.notes)
        if check.failure is not None:
            version, why = check.failure
            return Verdict(check.name, "failed", why, version, notes)
        if self.stopped_at is not None:
            return Verdict(
                check.name,
                "incomplete",
                f"checked up to version {self.stopped_at - 1} (the replay stops there)",
                None,
                notes,
            )
        return Verdict(check.name, "ok", fine, None, notes)


# --- what differs, in words ----------------------------------------------------------------------


def _differs(mine: Event, theirs: Event, name: str) -> bool:
    return bool(getattr(mine, name) != getattr(theirs, name))


def _brief(event: Event) -> str:
    """The gist of an event the rules make, for a message."""
    if isinstance(event, TurnStarted):
        return f"turn {event.number} to seat {event.seat}"
    if isinstance(event, RoundEnded):
        out = f"seat {event.out} out" if event.out is not None else "stalled"
        return f"round {event.round} ends, {out}"
    if isinstance(event, CardDrawn):
        return f"seat {event.seat} draws {len(event.cards)} card(s) from the {event.source}"
    if isinstance(event, TurnPlayed | CardDiscarded | TurnPassed | TurnTimedOut):
        return f"by seat {event.seat}"
    if isinstance(event, RoundDealt):
        return f"round {event.round}"
    return "its facts"


def _play_difference(mine: TurnPlayed, theirs: TurnPlayed) -> str:
    differences = []
    if mine.layout != theirs.layout:
        differences.append(f"layout {_melds(mine.layout)}, recorded {_melds(theirs.layout)}")
    if sorted(mine.played) != sorted(theirs.played):
        differences.append(f"played {_cards(mine.played)}, recorded {_cards(theirs.played)}")
    if sorted(mine.to_hand) != sorted(theirs.to_hand):
        differences.append(f"to the hand {_cards(mine.to_hand)}, recorded {_cards(theirs.to_hand)}")
    if mine.points != theirs.points:
        differences.append(f"points {mine.points}, recorded {theirs.points}")
    if mine.opening != theirs.opening:
        differences.append(f"opening {mine.opening}, recorded {theirs.opening}")
    if mine.redeemed != theirs.redeemed:
        differences.append(f"jokers redeemed {mine.redeemed}, recorded {theirs.redeemed}")
    if mine.seat != theirs.seat:
        differences.append(f"seat {mine.seat}, recorded {theirs.seat}")
    if not differences:  # the same cards in another order
        differences.append("the cards are recorded in another order")
    return "re-judged legal but different: " + "; ".join(differences)


def _draw_difference(state: GameState, mine: CardDrawn, theirs: CardDrawn, version: int) -> str:
    turn = state.turn
    if mine.penalty != theirs.penalty:
        rejected = turn.rejected if turn is not None else 0
        return (
            f"the draw at version {version} is marked "
            f"{'a' if theirs.penalty else 'not a'} failed-turn draw, but seat {theirs.seat} had "
            f"{rejected} rejected attempt(s) this turn"
        )
    if mine.source != theirs.source or mine.seat != theirs.seat:
        return (
            f"the draw at version {version} is seat {theirs.seat}'s from the {theirs.source!r}; "
            f"the rules make it seat {mine.seat}'s from the {mine.source}"
        )
    return (
        f"the draw at version {version} gives seat {theirs.seat} {_cards(theirs.cards)}, but the "
        f"top of the {mine.source} was {_cards(mine.cards)}"
    )


def _deal_difference(mine: RoundDealt, theirs: RoundDealt, version: int) -> str:
    number = theirs.round
    if mine.round != theirs.round:
        return f"round {theirs.round} is dealt at version {version}; round {mine.round} was due"
    if tuple(mine.seats) != tuple(theirs.seats):
        return (
            f"round {number} at version {version} is dealt to seats {list(theirs.seats)}, but "
            f"seats {list(mine.seats)} were due to play it"
        )
    if (mine.dealer, mine.starter) != (theirs.dealer, theirs.starter):
        return (
            f"round {number} at version {version} names dealer {theirs.dealer} and starter "
            f"{theirs.starter}; due were dealer {mine.dealer} and starter {mine.starter}"
        )
    every = sorted([*mine.stock, *mine.discard, *(c for h in mine.hands for c in h)])
    dealt = sorted([*theirs.stock, *theirs.discard, *(c for h in theirs.hands for c in h)])
    if every != dealt:
        return f"round {number}'s deal at version {version} is not one whole deck"
    sizes = [len(h) for h in mine.hands]
    if sizes != [len(h) for h in theirs.hands]:
        return (
            f"round {number} at version {version} deals hands of sizes "
            f"{[len(h) for h in theirs.hands]}; the rules deal {sizes}"
        )
    what = [
        name
        for name in ("hands", "stock", "discard")
        if getattr(mine, name) != getattr(theirs, name)
    ]
    return (
        f"round {number}'s deal at version {version} is not a deal by the rules: its "
        f"{', '.join(what)} do not follow from dealing its own cards"
    )


def _end_difference(mine: RoundEnded, theirs: RoundEnded, version: int) -> str:
    if (mine.reason, mine.out) != (theirs.reason, theirs.out):
        out = f"with seat {theirs.out} out" if theirs.out is not None else "stalled"
        rules = f"seat {mine.out} out" if mine.out is not None else "stalled"
        return (
            f"round {theirs.round} ends at version {version} {out} ({theirs.reason}), but by "
            f"the rules it ends {rules}"
        )
    what = []
    if tuple(mine.seats) != tuple(theirs.seats):
        what.append("the seats")
    if tuple(mine.hands) != tuple(theirs.hands):
        what.append("the hands left")
    if mine.last_player != theirs.last_player:
        what.append("the last play")
    if tuple(mine.redeemed) != tuple(theirs.redeemed):
        what.append("the jokers redeemed")
    if mine.round != theirs.round:
        what.append("its round")
    misstated = ", ".join(what) or "its facts"
    return f"round {theirs.round}'s end at version {version} misstates {misstated}"


def walk(game_id: str, events: Sequence[StoredEvent]) -> tuple[Verdict, Verdict, Verdict]:
    """The ``replay``, ``seed`` and ``scores`` verdicts of one game's events."""
    walker = _Walk(game_id, events)
    walker.run()
    return walker.verdicts()
