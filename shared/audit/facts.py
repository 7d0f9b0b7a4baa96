"""The walk over a game's events that re-checks every fact: the ``replay``, ``seed`` and
``scores`` verdicts of the audit (see ``shared.audit.verify`` for what each one checks).

One pass folds the state with ``shared.core.evolve`` and, before applying each event, checks it
against the state it applies to: the rules core re-judges plays and rejected attempts, draws must
hold the top of the stock, deals and reshuffles are recomputed with ``rr-shuffle-v1`` once the
seed is revealed, score sheets and the match result with the pure scoring module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from shared.audit.verdicts import Verdict, short
from shared.core.cards import cards_str, deck
from shared.core.decide import _choose_starter, _deal, _recorded, _rotation, round_sheet
from shared.core.events import (
    CardDiscarded,
    CardDrawn,
    CommandRejected,
    Event,
    GameCreated,
    GameStarted,
    MatchEnded,
    PlayerSeated,
    RoundDealt,
    RoundEnded,
    ScoresRecorded,
    SeedRevealed,
    StarterChosen,
    StockReshuffled,
    TurnForfeited,
    TurnPassed,
    TurnPlayed,
    TurnStarted,
    TurnTimedOut,
    event_from,
)
from shared.core.evolve import evolve
from shared.core.judgement import Verdict as Judged
from shared.core.judgement import judge_play
from shared.core.scoring import ScoringError, match_result
from shared.core.shuffle import commitment, shuffle_key, shuffled
from shared.core.state import GameState
from shared.infra import codec
from shared.infra.events import StoredEvent


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


def deck_conserved(state: GameState) -> bool:
    """Every card of the deck in exactly one place (stock, pile, a hand, the table)."""
    everywhere = [*state.stock, *state.discard]
    for hand in state.hands:
        everywhere += hand
    for meld in state.table:
        everywhere += meld
    everywhere.sort()
    return everywhere == deck(state.rules.jokers)


def expected_penalty(state: GameState) -> bool:
    """Whether a stock draw now is the failed-turn draw (rule 5's count)."""
    turn = state.turn
    return (
        turn is not None and turn.rejected > 0 and not turn.placed and not state.rules.discard_pile
    )


def rejudge(state: GameState, seat: int, layout: Sequence[Sequence[int]]) -> Judged:
    """Today's rules core on ``seat`` proposing ``layout`` in ``state``."""
    return judge_play(state.rules, state.table, state.hands[seat], state.opened[seat], layout)


def play_mismatch(state: GameState, event: TurnPlayed) -> str | None:
    """Why a recorded play is not what today's rules core makes of its layout (None: it is)."""
    verdict = rejudge(state, event.seat, event.layout)
    if not verdict.legal:
        return f"re-judged illegal ({verdict.code}): {verdict.reason}"
    differences = []
    if verdict.layout != event.layout:
        differences.append(f"layout {_melds(verdict.layout)}, recorded {_melds(event.layout)}")
    if tuple(sorted(verdict.played)) != tuple(sorted(event.played)):
        differences.append(f"played {_cards(verdict.played)}, recorded {_cards(event.played)}")
    if tuple(sorted(verdict.to_hand)) != tuple(sorted(event.to_hand)):
        differences.append(
            f"to the hand {_cards(verdict.to_hand)}, recorded {_cards(event.to_hand)}"
        )
    if verdict.points != event.points:
        differences.append(f"points {verdict.points}, recorded {event.points}")
    if verdict.opening != event.opening:
        differences.append(f"opening {verdict.opening}, recorded {event.opening}")
    if verdict.redeemed != event.redeemed:
        differences.append(f"jokers redeemed {verdict.redeemed}, recorded {event.redeemed}")
    turn = state.turn
    if turn is not None and turn.taken is not None and not verdict.out:
        left = list(state.hands[event.seat])
        for card in verdict.played:
            left.remove(card)
        if [*left, *verdict.to_hand] == [turn.taken]:
            differences.append("it leaves only the card taken from the pile this turn")
    if differences:
        return "re-judged legal but different: " + "; ".join(differences)
    return None


class _Walk:
    """One pass over the events: folds the state and runs the replay, seed and scores checks."""

    def __init__(self, game_id: str, events: Sequence[StoredEvent]) -> None:
        self.game_id = game_id
        self.events = events
        self.replay = _Check("replay")
        self.seed = _Check("seed")
        self.scores = _Check("scores")
        self.state = GameState()
        self.stopped_at: int | None = None
        self.key: bytes | None = None
        self.seed_usable = False
        self.reveal: tuple[int, str] | None = None
        self.ended_by: set[str] = set()  # pass, timeout, discard during the current turn
        self.counts = {
            "plays": 0,
            "rejected": 0,
            "draws": 0,
            "deals": 0,
            "reshuffles": 0,
            "starters": 0,
            "sheets": 0,
            "matches": 0,
        }

    # -- driver --

    def run(self) -> None:
        self._prepare_seed()
        for stored in self.events:
            version = stored.version
            try:
                current = codec.UPCASTERS.upcast(stored)
                event = event_from(current.type, current.data)
            except ValueError as err:  # CodecError, UnknownEvent
                self.replay.fail(version, f"version {version} is not a known event: {err}")
                self.stopped_at = version
                return
            before = self.state
            try:
                self._before(before, event, version, stored.time)
            except Exception as err:  # a check that met data of the wrong shape
                self.replay.fail(
                    version, f"version {version} ({event.TYPE}) holds malformed facts: {err!r}"
                )
            try:
                after = evolve(before, event)
            except Exception as err:
                self.replay.fail(
                    version, f"version {version} ({event.TYPE}) cannot be applied: {err!r}"
                )
                self.stopped_at = version
                return
            self.state = after

    def _prepare_seed(self) -> None:
        reveals = [e for e in self.events if e.type == "SeedRevealed"]
        if not reveals:
            return
        last = codec.UPCASTERS.upcast(reveals[-1])
        seed = last.data.get("seed")
        self.reveal = (last.version, seed if isinstance(seed, str) else "")
        created = self.events[0].data if self.events else {}
        promised = created.get("commitment") if self.events[0].type == "GameCreated" else None
        try:
            raw = bytes.fromhex(self.reveal[1])
        except ValueError:
            self.seed.fail(last.version, f"the revealed seed {self.reveal[1]!r} is not hex")
            return
        if not self.reveal[1] or commitment(raw) != promised:
            self.seed.fail(
                last.version,
                f"the seed revealed at version {last.version} hashes to "
                f"{short(commitment(raw))}, but GameCreated (version 1) committed to "
                f"{short(str(promised))}: it is not the committed seed",
            )
            return
        self.key = raw
        self.seed_usable = True

    # -- checks before applying an event (on the state before it) --

    def _before(self, s: GameState, e: Event, version: int, time: float) -> None:
        fail = self.replay.fail
        if s.status == "new" and not isinstance(e, GameCreated):
            fail(version, f"the log starts with {e.TYPE}, not GameCreated")
            return
        if isinstance(e, GameCreated):
            if s.status != "new":
                fail(version, f"a second GameCreated at version {version}")
            elif e.game_id != self.game_id:
                fail(version, f"GameCreated names game {e.game_id!r}, not {self.game_id!r}")
        elif isinstance(e, PlayerSeated):
            if s.status != "waiting" or s.seated() >= s.seats or e.seat != s.seated():
                fail(version, f"seat {e.seat} taken at version {version}, which is not allowed")
        elif isinstance(e, GameStarted):
            if s.status != "waiting" or s.seated() != s.seats:
                fail(version, f"the game started at version {version} without every seat taken")
        elif isinstance(e, StarterChosen):
            self._starter(s, e, version)
        elif isinstance(e, RoundDealt):
            self._deal(s, e, version)
        elif isinstance(e, TurnStarted):
            self._turn_started(s, e, version, time)
        elif isinstance(e, TurnPlayed):
            self._played(s, e, version)
        elif isinstance(e, CommandRejected):
            self._rejected(s, e, version)
        elif isinstance(e, CardDrawn):
            self._drawn(s, e, version)
        elif isinstance(e, CardDiscarded):
            self._discarded(s, e, version)
        elif isinstance(e, StockReshuffled):
            self._reshuffled(s, e, version)
        elif isinstance(e, TurnPassed):
            if self._on_turn(s, e.seat, version, "a pass"):
                turn = s.turn
                assert turn is not None
                if s.stock or len(s.discard) > 1:
                    fail(version, f"seat {e.seat} passed at version {version} with cards to draw")
                elif turn.placed or turn.drawn:
                    fail(version, f"seat {e.seat} passed at version {version} after moving")
                self.ended_by.add("pass")
        elif isinstance(e, TurnTimedOut):
            turn = s.turn
            if s.phase != "turns" or turn is None or turn.number != e.number:
                fail(version, f"turn {e.number} timed out at version {version}, not in play")
            elif turn.seat != e.seat:
                fail(version, f"the timeout at version {version} names seat {e.seat}")
            elif turn.deadline is None or time < turn.deadline:
                fail(version, f"turn {e.number} timed out at version {version} before its deadline")
            self.ended_by.add("timeout")
        elif isinstance(e, TurnForfeited):  # Decision 14: one rejected layout past the limit
            turn, limit = s.turn, s.rules.max_rejections
            if s.phase != "turns" or turn is None or (turn.seat, turn.number) != (e.seat, e.number):
                fail(version, f"turn {e.number} is forfeited at version {version}, not in play")
            elif e.reason != "max_rejections" or e.rejected != turn.rejected or e.rejected <= limit:
                fail(
                    version,
                    f"turn {e.number} is forfeited at version {version} after {turn.rejected} "
                    f"rejected layout(s) ({e.reason}, {e.rejected} recorded); max_rejections is "
                    f"{limit}",
                )
        elif isinstance(e, RoundEnded):
            self._round_ended(s, e, version)
        elif isinstance(e, ScoresRecorded):
            self._scores(s, e, version)
        elif isinstance(e, MatchEnded):
            self._match_ended(s, e, version)
        elif isinstance(e, SeedRevealed) and (s.status != "finished" or s.revealed_seed):
            fail(version, f"the seed is revealed at version {version}, before the match ended")

    def _on_turn(self, s: GameState, seat: int, version: int, what: str) -> bool:
        turn = s.turn
        if s.phase != "turns" or turn is None:
            self.replay.fail(version, f"{what} by seat {seat} at version {version}, outside a turn")
            return False
        if turn.seat != seat:
            self.replay.fail(
                version, f"{what} by seat {seat} at version {version}, on seat {turn.seat}'s turn"
            )
            return False
        return True

    def _starter(self, s: GameState, e: StarterChosen, version: int) -> None:
        if s.status != "playing" or s.round != 0 or s.first_starter is not None:
            self.replay.fail(version, f"a starter is chosen at version {version}, out of place")
        self.counts["starters"] += 1
        if self.seed_usable and self.key is not None:
            key = shuffle_key(self.key, s.game_id, s.seeds)
            expected = _choose_starter(s, key)
            if expected != e:
                self.seed.fail(
                    version,
                    f"StarterChosen at version {version} is not what rr-shuffle-v1 gives for the "
                    f"revealed seed: dealer {expected.dealer} and starter {expected.starter} by "
                    f"{expected.draws}, recorded dealer {e.dealer} and starter {e.starter} by "
                    f"{e.draws}",
                )

    def _deal(self, s: GameState, e: RoundDealt, version: int) -> None:
        fail = self.replay.fail
        self.counts["deals"] += 1
        rules = s.rules
        if s.status != "playing" or e.round != s.round + 1:
            fail(version, f"round {e.round} is dealt at version {version}, out of place")
            return
        if e.round == 1:
            if s.phase != "none" or s.first_starter is None:
                fail(version, f"round 1 is dealt at version {version} before a starter is chosen")
                return
            seats: tuple[int, ...] = tuple(range(s.seats))
            due = (s.first_dealer, s.first_starter)
        else:
            if s.phase != "next":
                fail(
                    version,
                    f"round {e.round} is dealt at version {version} before round "
                    f"{s.round}'s score sheet",
                )
                return
            try:
                status = match_result(rules, s.seats, [_recorded(r) for r in s.rounds])
            except (ScoringError, AssertionError) as err:
                self.scores.fail(
                    version, f"the score sheets before version {version} do not make a match: {err}"
                )
                return
            if status.over:
                self.scores.fail(
                    version,
                    f"round {e.round} is dealt at version {version}, but the match was over "
                    f"(won by seat(s) {list(status.winners)})",
                )
                return
            seats = status.next_seats
            due = _rotation(s, e.round, seats)
        if tuple(e.seats) != seats:
            fail(
                version,
                f"round {e.round} at version {version} is dealt to seats "
                f"{list(e.seats)}, but seats {list(seats)} were due to play it",
            )
        elif (e.dealer, e.starter) != due:
            fail(
                version,
                f"round {e.round} at version {version} names dealer {e.dealer} and "
                f"starter {e.starter}; due were dealer {due[0]} and starter {due[1]}",
            )
        size = rules.hand_size_for(len(e.seats))
        if len(e.hands) != s.seats or any(
            len(hand) != (size if seat in e.seats else 0) for seat, hand in enumerate(e.hands)
        ):
            fail(
                version,
                f"round {e.round} at version {version} deals hands of sizes "
                f"{[len(h) for h in e.hands]}, not {size} cards to each seat playing",
            )
        if len(e.discard) != (1 if rules.discard_pile else 0):
            fail(
                version,
                f"round {e.round} at version {version} starts a pile of {len(e.discard)} cards",
            )
        everything = [*e.stock, *e.discard, *(c for h in e.hands for c in h)]
        if sorted(everything) != deck(rules.jokers):
            fail(version, f"round {e.round}'s deal at version {version} is not one whole deck")
        if self.seed_usable and self.key is not None:
            key = shuffle_key(self.key, s.game_id, s.seeds)
            expected = _deal(s, key, e.round, tuple(e.seats), e.dealer, e.starter)
            if expected != e:
                what = [
                    f"the hand of seat {i}"
                    for i, (a, b) in enumerate(zip(expected.hands, e.hands, strict=False))
                    if a != b
                ]
                if expected.stock != e.stock:
                    what.append("the stock order")
                if expected.discard != e.discard:
                    what.append("the pile")
                self.seed.fail(
                    version,
                    f"round {e.round}'s deal at version {version} is not what rr-shuffle-v1 "
                    f"gives for the revealed seed: {', '.join(what) or 'its facts'} differ",
                )

    def _turn_started(self, s: GameState, e: TurnStarted, version: int, time: float) -> None:
        fail = self.replay.fail
        if s.phase != "turns":
            fail(version, f"turn {e.number} starts at version {version}, outside a round")
            return
        if e.number != s.turn_number + 1:
            fail(
                version, f"turn {e.number} starts at version {version}, after turn {s.turn_number}"
            )
        turn = s.turn
        if turn is None:
            due = s.starter
        else:
            due = s.next_seat(turn.seat)
            ended = bool(self.ended_by & {"pass", "timeout"}) or (
                "discard" in self.ended_by if s.rules.discard_pile else (turn.placed or turn.drawn)
            )
            if not ended:
                fail(
                    version,
                    f"turn {turn.number} (seat {turn.seat}) ends at version {version} "
                    "without a play, a draw, a discard, a pass or a timeout",
                )
        if e.seat != due:
            fail(
                version,
                f"turn {e.number} at version {version} goes to seat {e.seat}, but it "
                f"was seat {due}'s turn",
            )
        seconds = s.rules.turn_seconds
        deadline = time + seconds if seconds else None
        if e.deadline != deadline:
            fail(
                version,
                f"turn {e.number} at version {version} has deadline {e.deadline}, "
                f"not {deadline} ({seconds} seconds after it started)",
            )
        if not deck_conserved(s):
            fail(
                version,
                f"the cards before turn {e.number} (version {version}) are not one whole deck",
            )
        self.ended_by = set()

    def _played(self, s: GameState, e: TurnPlayed, version: int) -> None:
        if not self._on_turn(s, e.seat, version, "a play"):
            return
        turn = s.turn
        assert turn is not None
        self.counts["plays"] += 1
        rules = s.rules
        if rules.discard_pile and not turn.drawn:
            self.replay.fail(version, f"seat {e.seat} played at version {version} before drawing")
            return
        if (
            rules.turn_shape == "play_or_draw"
            and not rules.discard_pile
            and (turn.placed or turn.drawn)
        ):
            self.replay.fail(version, f"seat {e.seat} played twice in turn {turn.number}")
            return
        why = play_mismatch(s, e)
        if why:
            self.replay.fail(version, f"the play at version {version} by seat {e.seat}: {why}")

    def _rejected(self, s: GameState, e: CommandRejected, version: int) -> None:
        if e.layout is None:
            return
        if not self._on_turn(s, e.seat, version, "a rejected attempt"):
            return
        self.counts["rejected"] += 1
        verdict = rejudge(s, e.seat, e.layout)
        if verdict.legal:
            self.replay.fail(
                version,
                f"the attempt rejected at version {version} ({e.detail}) is legal by today's "
                f"rules core: {_melds(e.layout)} from seat {e.seat}'s hand",
            )
        elif verdict.code != e.detail:
            self.replay.notes.append(
                f"version {version}: rejected as {e.detail}, today's rules core says {verdict.code}"
            )

    def _drawn(self, s: GameState, e: CardDrawn, version: int) -> None:
        if not self._on_turn(s, e.seat, version, "a draw"):
            return
        turn = s.turn
        assert turn is not None
        self.counts["draws"] += 1
        fail = self.replay.fail
        rules = s.rules
        if turn.drawn or (rules.discard_pile and turn.placed):
            fail(
                version,
                f"seat {e.seat} drew a second time in turn {turn.number} (version {version})",
            )
            return
        if e.source == "pile":
            if not rules.discard_pile or tuple(e.cards) != s.discard[-1:] or e.penalty:
                fail(
                    version,
                    f"the draw at version {version} takes {_cards(e.cards)} from the "
                    f"pile, whose top is {_cards(s.discard[-1:])}",
                )
            return
        if e.source != "stock":
            fail(version, f"the draw at version {version} is from {e.source!r}")
            return
        penalty = expected_penalty(s)
        count = rules.failed_turn_draw if penalty else 1
        if e.penalty != penalty:
            fail(
                version,
                f"the draw at version {version} is marked "
                f"{'a' if e.penalty else 'not a'} failed-turn draw, but seat {e.seat} had "
                f"{turn.rejected} rejected attempt(s) this turn",
            )
        elif not s.stock or tuple(e.cards) != s.stock[:count]:
            fail(
                version,
                f"the draw at version {version} gives seat {e.seat} "
                f"{_cards(e.cards)}, but the top of the stock was {_cards(s.stock[:count])}",
            )

    def _discarded(self, s: GameState, e: CardDiscarded, version: int) -> None:
        if not self._on_turn(s, e.seat, version, "a discard"):
            return
        turn = s.turn
        assert turn is not None
        hand = s.hands[e.seat]
        if not s.rules.discard_pile or not turn.drawn:
            self.replay.fail(version, f"the discard at version {version} is not allowed here")
        elif e.card not in hand:
            self.replay.fail(
                version,
                f"seat {e.seat} discards {_cards([e.card])} at version "
                f"{version}, which is not in its hand",
            )
        elif e.card == turn.taken and hand.count(e.card) < 2:
            self.replay.fail(version, f"seat {e.seat} discards the card it took from the pile")
        self.ended_by.add("discard")

    def _reshuffled(self, s: GameState, e: StockReshuffled, version: int) -> None:
        self.counts["reshuffles"] += 1
        if (
            s.phase != "turns"
            or not s.rules.discard_pile
            or len(s.discard) < 2
            or tuple(e.stock[: len(s.stock)]) != s.stock
            or sorted(e.stock) != sorted((*s.stock, *s.discard[:-1]))
        ):
            self.replay.fail(
                version,
                f"the reshuffle at version {version} is not the pile "
                "under its top card added to the stock",
            )
            return
        if self.seed_usable and self.key is not None:
            key = shuffle_key(self.key, s.game_id, s.seeds)
            refill = shuffled(s.discard[:-1], key, f"reshuffle/{s.turn_number}")
            if tuple(e.stock) != (*s.stock, *refill):
                self.seed.fail(
                    version,
                    f"the reshuffle at version {version} is not what "
                    "rr-shuffle-v1 gives for the revealed seed",
                )

    def _round_ended(self, s: GameState, e: RoundEnded, version: int) -> None:
        fail = self.replay.fail
        if s.phase != "turns" or e.round != s.round:
            fail(version, f"round {e.round} ends at version {version}, out of place")
            return
        turn = s.turn
        if e.reason == "out":
            if e.out is None or turn is None or e.out != turn.seat or s.hands[e.out]:
                fail(
                    version,
                    f"round {e.round} ends at version {version} with seat {e.out} "
                    "out, but that seat has not emptied its hand on its turn",
                )
                return
        elif e.reason == "stalled":
            if e.out is not None or s.passes < len(s.round_seats):
                fail(
                    version,
                    f"round {e.round} ends stalled at version {version}, but only "
                    f"{s.passes} seat(s) in a row passed",
                )
                return
        else:
            fail(version, f"round {e.round} ends at version {version} for reason {e.reason!r}")
            return
        expected = RoundEnded(
            s.round, e.reason, e.out, s.round_seats, s.hands, s.last_player, s.redeemed
        )
        if expected != e:
            what = []
            if tuple(e.seats) != s.round_seats:
                what.append("the seats")
            if tuple(e.hands) != s.hands:
                what.append("the hands left")
            if e.last_player != s.last_player:
                what.append("the last play")
            if tuple(e.redeemed) != s.redeemed:
                what.append("the jokers redeemed")
            fail(
                version,
                f"round {e.round}'s end at version {version} misstates "
                f"{', '.join(what) or 'its facts'}",
            )

    def _scores(self, s: GameState, e: ScoresRecorded, version: int) -> None:
        if s.phase != "scoring" or not s.rounds:
            self.replay.fail(
                version, f"a score sheet at version {version}, with no round waiting for one"
            )
            return
        self.counts["sheets"] += 1
        last = s.rounds[-1]
        try:
            sheet = round_sheet(s.rules, last)
        except ScoringError as err:
            self.scores.fail(version, f"round {last.round} cannot be scored: {err}")
            return
        expected = (last.round, sheet.winner, sheet.went_out, sheet.seats, sheet.scores)
        recorded = (e.round, e.winner, e.went_out, tuple(e.seats), e.scores)
        if expected != recorded:
            self.scores.fail(
                version,
                f"the score sheet of round {e.round} at version {version} says winner "
                f"{e.winner}, scores {e.scores}; round {last.round}'s facts give winner "
                f"{sheet.winner}, scores {sheet.scores}",
            )

    def _match_ended(self, s: GameState, e: MatchEnded, version: int) -> None:
        if s.status != "playing" or s.phase != "next":
            self.replay.fail(version, f"the match ends at version {version}, out of place")
            return
        self.counts["matches"] += 1
        try:
            status = match_result(s.rules, s.seats, [_recorded(r) for r in s.rounds])
        except (ScoringError, AssertionError) as err:
            self.scores.fail(version, f"the score sheets do not make a match: {err}")
            return
        table = status.standings
        if not status.over:
            self.scores.fail(
                version,
                f"the match ends at version {version}, but by its score sheets it is not over",
            )
            return
        expected = (status.winners, table.totals, table.outs, table.wins)
        recorded = (tuple(e.winners), e.totals, tuple(e.outs), tuple(e.wins))
        if expected != recorded:
            self.scores.fail(
                version,
                f"MatchEnded at version {version} says winners {list(e.winners)}, totals "
                f"{e.totals}; the score sheets give winners {list(status.winners)}, totals "
                f"{table.totals}",
            )

    # -- verdicts --

    def verdicts(self) -> tuple[Verdict, Verdict, Verdict]:
        c = self.counts
        replay = self._verdict(
            self.replay,
            f"{len(self.events)} events fold; {c['plays']} plays re-judged legal with the same "
            f"table, {c['rejected']} rejected attempts illegal, {c['draws']} draws from the top "
            "of the stock or pile",
        )
        if self.seed.failure is None and self.stopped_at is None and self.reveal is None:
            finished = any(e.type == "MatchEnded" for e in self.events)
            if finished:
                ended = next(e.version for e in self.events if e.type == "MatchEnded")
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
            f"{c['deals']} deal(s) and {c['reshuffles']} reshuffle(s) recomputed with "
            "rr-shuffle-v1",
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


def walk(game_id: str, events: Sequence[StoredEvent]) -> tuple[Verdict, Verdict, Verdict]:
    """The ``replay``, ``seed`` and ``scores`` verdicts of one game's events."""
    walker = _Walk(game_id, events)
    walker.run()
    return walker.verdicts()
