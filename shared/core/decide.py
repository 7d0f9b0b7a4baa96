"""``decide(state, command, context) -> events | Rejection``: the rules applied to one command.

Pure: the same state, command and context always give the same answer. Anything random comes
from the seeded shuffle keyed by the secret seed in the context (checked against the game's
commitment), and every random outcome is written into the events, so replaying never needs it.
A refusal is a ``Rejection`` value, never an exception; an illegal layout is refused *and*
recorded (a ``CommandRejected`` event), since disputes need the attempts too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shared.core.botnames import BOT_NAMES, BOTS_ALLOWED
from shared.core.cards import JOKER, card_str
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
from shared.core.dealing import choose_starter, deal, recorded_sheet, reshuffled, rotation
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
    RoundEnded,
    ScoresRecorded,
    SeatHandedToBot,
    SeatLeft,
    SeatResigned,
    SeatReturned,
    SeatSkipped,
    SeedRevealed,
    TurnForfeited,
    TurnPassed,
    TurnPlayed,
    TurnStarted,
    TurnTimedOut,
)
from shared.core.evolve import evolve
from shared.core.judgement import judge_play
from shared.core.melds import card_values
from shared.core.rulesets import RuleSet, RuleSetError, check_seats, rule_set
from shared.core.scoring import RoundScore, match_result, score_round
from shared.core.shuffle import SeededShuffle, Shuffle, commitment, shuffle_key
from shared.core.state import GameState, RoundResult

Decision = list[Event] | Rejection


def _no(code: str, message: str) -> Rejection:
    return Rejection(code, message)


# --- game set-up -------------------------------------------------------------------------------


def _create(state: GameState, cmd: CreateGame, ctx: Context) -> Decision:
    if state.status != "new":
        return _no("game_exists", f"game {state.game_id!r} already exists")
    try:
        rules = rule_set(cmd.rules, cmd.options)
        check_seats(rules, cmd.seats)
    except RuleSetError as err:
        message = str(err)
        if err.option not in message:  # Decision 12: the refusal names the option
            message = f"option {err.option!r}: {message}"
        return _no("bad_options", message)
    created = GameCreated(
        cmd.game_id,
        cmd.rules,
        dict(cmd.options),
        cmd.seats,
        cmd.commitment,
        cmd.rematch_of,
        cmd.tournament,
    )
    return [created]


def _sit(state: GameState, cmd: Sit, ctx: Context) -> Decision:
    if state.status == "new":
        return _no("game_not_started", "no such game")
    if state.status == "cancelled":
        return _no("game_cancelled", "the game was cancelled")
    if state.status != "waiting":
        return _no("game_started", "the game has started; seats can no longer be taken")
    if state.seated() >= state.seats:
        return _no("game_full", f"all {state.seats} seats are taken")
    if cmd.bot is not None and cmd.bot not in BOT_NAMES:
        return _no("bad_command", f"bot is {cmd.bot!r}; allowed: {BOTS_ALLOWED}")
    seat = state.free_seat()
    if cmd.seat is not None:
        if not 0 <= cmd.seat < state.seats:
            return _no("bad_command", f"seat is {cmd.seat}; allowed: 0 to {state.seats - 1}")
        if cmd.seat < len(state.names) and state.names[cmd.seat]:
            return _no("seat_taken", f"seat {cmd.seat} is taken")
        seat = cmd.seat
    elif state.tournament:
        return _no(
            "seat_reserved",
            f"this game is a table of tournament {state.tournament}: the tournament seats its "
            "entrants, each at the seat it was given",
        )
    elif state.rematch_of:
        return _no(
            "seat_reserved",
            f"this game is the rematch of {state.rematch_of}: its seats are kept for the "
            "players of that game (who join it from there)",
        )
    return [PlayerSeated(seat, cmd.name, cmd.seed, cmd.bot, cmd.player)]


def _shuffle(state: GameState, ctx: Context) -> Shuffle | Rejection:
    """Where the random orders come from: the context's shuffle if it gives one, else the
    seeded shuffle, once the context's seed is checked against the commitment."""
    if ctx.shuffle is not None:
        return ctx.shuffle
    if ctx.seed is None or commitment(ctx.seed) != state.commitment:
        return _no("bad_seed", "the seed does not match the game's commitment")
    return SeededShuffle(shuffle_key(ctx.seed, state.game_id, state.seeds))


def _start(state: GameState, cmd: Start, ctx: Context) -> Decision:
    if state.status == "new":
        return _no("game_not_started", "no such game")
    if state.status == "cancelled":
        return _no("game_cancelled", "the game was cancelled")
    if state.status != "waiting":
        return _no("game_started", "the game has already started")
    if state.seated() < state.seats:
        return _no(
            "seats_empty", f"{state.seats - state.seated()} of {state.seats} seats are empty"
        )
    shuffle = _shuffle(state, ctx)
    if isinstance(shuffle, Rejection):
        return shuffle
    chosen = choose_starter(state, shuffle)
    seats = tuple(range(state.seats))
    dealt = deal(state, shuffle, 1, seats, chosen.dealer, chosen.starter)
    return [GameStarted(), chosen, dealt, _next_turn(state, chosen.starter, ctx)]


def _next_turn(state: GameState, seat: int, ctx: Context) -> TurnStarted:
    seconds = state.rules.turn_seconds
    deadline = ctx.now + seconds if seconds else None
    return TurnStarted(seat, state.turn_number + 1, deadline)


# --- turns -------------------------------------------------------------------------------------


def _turn_check(state: GameState, seat: int) -> Rejection | None:
    if state.status in ("new", "waiting"):
        return _no("game_not_started", "the game has not started")
    if state.status == "finished":
        return _no("game_finished", "the game is over")
    if state.status == "cancelled":
        return _no("game_cancelled", "the game was cancelled")
    if state.phase != "turns" or state.turn is None:
        return _no("round_over", "the round is over; the next one is dealt after the scores")
    if seat != state.turn.seat:
        return _no("not_your_turn", f"it is seat {state.turn.seat}'s turn, not seat {seat}'s")
    return None


def _end_turn(state: GameState, seat: int, ctx: Context) -> list[Event]:
    return [_next_turn(state, state.next_seat(seat), ctx)]


def _play(state: GameState, cmd: Play, ctx: Context) -> Decision:
    refused = _turn_check(state, cmd.seat)
    if refused:
        return refused
    assert state.turn is not None
    rules = state.rules
    if rules.discard_pile and not state.turn.drawn:
        return _no("must_draw_first", "every turn begins with a draw from the stock or the pile")
    hand = state.hands[cmd.seat]
    verdict = judge_play(rules, state.table, hand, state.opened[cmd.seat], cmd.layout)
    if not verdict.legal:
        assert verdict.code is not None and verdict.reason is not None
        if state.turn.rejected < rules.max_rejections:
            return [
                CommandRejected(
                    cmd.seat, "play", "illegal_layout", verdict.code, verdict.reason, cmd.layout
                )
            ]
        return _forfeit(state, cmd, verdict.code, verdict.reason, ctx)
    taken = state.turn.taken
    if taken is not None and not verdict.out:
        left = list(hand)
        for card in verdict.played:
            left.remove(card)
        left += verdict.to_hand
        if left == [taken]:
            # Decision 10: the turn must end with a discard, and the card taken from the pile
            # cannot be it; a play that leaves only that card would leave no way to end the turn.
            return _no(
                "card_taken_from_pile",
                f"the play would leave only {card_str(taken)}, taken from the pile this turn, "
                "which cannot be discarded; keep another card to discard, or play them all",
            )
    events: list[Event] = [
        TurnPlayed(
            cmd.seat,
            verdict.layout,
            verdict.played,
            verdict.to_hand,
            verdict.points,
            verdict.opening,
            verdict.redeemed,
        )
    ]
    if verdict.out:
        events.append(_round_end(state, "out", cmd.seat, cmd.seat, verdict.redeemed))
    elif rules.turn_shape == "play_or_draw" and not rules.discard_pile:
        events.extend(_end_turn(state, cmd.seat, ctx))
    return events


def _round_end(
    state: GameState, reason: str, out: int | None, last: int | None, redeemed_now: int = 0
) -> RoundEnded:
    """The facts of the round's end; ``out`` has just emptied its hand (by a play that redeemed
    ``redeemed_now`` jokers, or by a discard)."""
    hands = list(state.hands)
    redeemed = list(state.redeemed)
    if out is not None:
        hands[out] = ()
        redeemed[out] += redeemed_now
    resigned = tuple(seat for seat in state.round_seats if state.is_resigned(seat))
    return RoundEnded(
        state.round, reason, out, state.round_seats, tuple(hands), last, tuple(redeemed), resigned
    )


def _stock_empty(state: GameState) -> bool:
    """No card can come from the stock, not even by reshuffling the pile (Decision 10)."""
    return not state.stock and not _can_reshuffle(state)


def _can_reshuffle(state: GameState) -> bool:
    """The pile (but its top card) may become the stock: the discard-pile variant, a pile of
    more than one card, and fewer reshuffles this round than ``max_reshuffles`` allows."""
    rules = state.rules
    limit = rules.max_reshuffles
    return (
        rules.discard_pile
        and len(state.discard) > 1
        and (limit is None or state.reshuffles < limit)
    )


def _draw_cards(
    state: GameState, seat: int, count: int, penalty: bool, ctx: Context
) -> list[Event] | Rejection:
    """Draw ``count`` cards from the stock, reshuffling the pile into it when it runs out."""
    events: list[Event] = []
    stock = state.stock
    if len(stock) < count and _can_reshuffle(state):
        shuffle = _shuffle(state, ctx)
        if isinstance(shuffle, Rejection):
            return shuffle
        refilled = reshuffled(state, shuffle)
        events.append(refilled)
        stock = refilled.stock
    events.append(CardDrawn(seat, stock[:count], "stock", penalty))
    return events


def _draw(state: GameState, cmd: Draw, ctx: Context) -> Decision:
    refused = _turn_check(state, cmd.seat)
    if refused:
        return refused
    assert state.turn is not None
    rules, turn = state.rules, state.turn
    if turn.drawn:
        return _no("already_drawn", "the seat has already drawn this turn")
    if rules.discard_pile and turn.placed:
        return _no("already_drawn", "the turn's draw comes before any play")
    if cmd.source == "pile":
        if not rules.discard_pile:
            return _no("not_in_these_rules", "there is no discard pile in these rules")
        if not state.discard:
            return _no("pile_empty", "the discard pile is empty")
        return [CardDrawn(cmd.seat, state.discard[-1:], "pile", False)]
    if _stock_empty(state):
        return _no("stock_empty", "the stock is empty: pass instead")
    failed = turn.rejected > 0 and not turn.placed and not rules.discard_pile
    count = rules.failed_turn_draw if failed else 1
    events = _draw_cards(state, cmd.seat, count, failed, ctx)
    if isinstance(events, Rejection):
        return events
    if rules.turn_shape == "play_or_draw" and not rules.discard_pile:
        events.extend(_end_turn(state, cmd.seat, ctx))
    return events


def _end(state: GameState, cmd: End, ctx: Context) -> Decision:
    refused = _turn_check(state, cmd.seat)
    if refused:
        return refused
    assert state.turn is not None
    if state.rules.turn_shape != "place_draw_place":
        return _no("not_in_these_rules", "a play or a draw ends the turn in these rules")
    if state.rules.discard_pile:
        return _no("must_discard", "the turn ends with a discard")
    if not (state.turn.placed or state.turn.drawn):
        return _no("must_draw_or_place", "place a card or draw before ending the turn")
    return _end_turn(state, cmd.seat, ctx)


def _pass_or_stall(state: GameState, seat: int, ctx: Context) -> list[Event]:
    events: list[Event] = [TurnPassed(seat)]
    if state.passes + 1 >= len(state.playing_seats()):
        events.append(_round_end(state, "stalled", None, state.last_player))
    else:
        events.extend(_end_turn(state, seat, ctx))
    return events


def _pass(state: GameState, cmd: Pass, ctx: Context) -> Decision:
    refused = _turn_check(state, cmd.seat)
    if refused:
        return refused
    assert state.turn is not None
    if not _stock_empty(state):
        return _no("stock_not_empty", f"the stock holds {len(state.stock)} cards: draw instead")
    if state.turn.placed or state.turn.drawn:
        code = "must_discard" if state.rules.discard_pile else "not_in_these_rules"
        return _no(code, "a seat that placed or drew ends its turn instead of passing")
    return _pass_or_stall(state, cmd.seat, ctx)


def _discard(state: GameState, cmd: Discard, ctx: Context) -> Decision:
    refused = _turn_check(state, cmd.seat)
    if refused:
        return refused
    assert state.turn is not None
    if not state.rules.discard_pile:
        return _no("not_in_these_rules", "there is no discard pile in these rules")
    if not state.turn.drawn:
        return _no("must_draw_first", "every turn begins with a draw from the stock or the pile")
    hand = state.hands[cmd.seat]
    if cmd.card not in hand:
        return _no("card_not_in_hand", f"card {card_str(cmd.card)} is not in the hand")
    if cmd.card == state.turn.taken and hand.count(cmd.card) < 2:
        return _no(
            "card_taken_from_pile",
            f"card {card_str(cmd.card)} was taken from the pile this turn",
        )
    events: list[Event] = [CardDiscarded(cmd.seat, cmd.card)]
    if len(hand) == 1:
        events.append(_round_end(state, "out", cmd.seat, state.last_player))
    else:
        events.extend(_end_turn(state, cmd.seat, ctx))
    return events


def _forfeit(state: GameState, cmd: Play, code: str, reason: str, ctx: Context) -> Decision:
    """Decision 14: the rejected layout one past ``max_rejections`` is recorded, and the referee
    ends the turn at once, as the timer would (Decision 6) after a rejected layout."""
    assert state.turn is not None
    rejected = state.turn.rejected + 1
    ending = _referee_ends_turn(state, cmd.seat, True, ctx)
    if isinstance(ending, Rejection):
        return ending
    limit = state.rules.max_rejections
    told = (
        f"{reason}; that is rejected layout {rejected} of this turn, one more than "
        f"max_rejections ({limit}) allows: the turn is over ({_ending_words(ending)})"
    )
    return [
        CommandRejected(cmd.seat, "play", "illegal_layout", code, told, cmd.layout),
        TurnForfeited(cmd.seat, state.turn.number, "max_rejections", rejected),
        *ending,
    ]


def _ending_words(events: list[Event]) -> str:
    """How the referee ended a turn, for the seat's refusal message."""
    for event in events:
        if isinstance(event, CardDrawn):
            count = len(event.cards)
            return f"you drew {count} card{'' if count == 1 else 's'}"
        if isinstance(event, TurnPassed):
            return "the stock is empty: a pass"
        if isinstance(event, CardDiscarded):
            return f"the referee discarded {card_str(event.card)} for you"
    return "it ends as it stands"


def _timeout(state: GameState, cmd: Timeout, ctx: Context) -> Decision:
    """Decision 6: at the deadline the referee ends the turn as a draw (rule 5's count), as a
    pass with an empty stock, or with a discard where the seat has already drawn.

    Decision 17: an untimed turn (no ``deadline``) ends the same way at its absence limit,
    ``absent_seconds``, which the service's timer keeps (as it keeps the time of every
    decision); a skipped seat's turn ends at once. A seat whose player has now missed
    ``absent_turns`` turns in a row is handled by the ``absent`` policy, in the same decision."""
    turn = state.turn
    if state.phase != "turns" or turn is None or turn.number != cmd.number:
        return _no("stale_timeout", f"turn {cmd.number} is already over")
    seat = turn.seat
    if cmd.reason == "skipped":
        if not (_away(state, seat) and state.away[seat] == "skip"):
            return _no("timer_not_expired", f"seat {seat}'s turns are not skipped")
    elif cmd.reason == "absent":
        if turn.deadline is not None:
            return _no("timer_not_expired", f"turn {cmd.number} is timed: it ends at its deadline")
    elif turn.deadline is None or ctx.now < turn.deadline:
        return _no("timer_not_expired", f"turn {cmd.number}'s deadline has not passed")
    timed_out = TurnTimedOut(seat, turn.number, cmd.reason)
    events: list[Event] = [timed_out]
    after = evolve(state, timed_out)
    rules = state.rules
    present = state.bot_at(seat) is None and not _away(state, seat)
    if present and after.missed[seat] >= rules.absent_turns:
        if rules.absent == "forfeit":
            return [*events, *_resignation(after, seat, "absent", ctx)]
        gone: Event = (
            SeatHandedToBot(seat, rules.absent_bot, "absent")
            if rules.absent == "bot"
            else SeatSkipped(seat, "absent")
        )
        events.append(gone)
        after = evolve(after, gone)
    ending = _referee_ends_turn(after, seat, turn.rejected > 0, ctx)
    if isinstance(ending, Rejection):
        return ending
    return [*events, *ending]


def _referee_ends_turn(
    state: GameState, seat: int, failed: bool, ctx: Context
) -> list[Event] | Rejection:
    """The end of a turn the seat did not end itself (the timer, Decision 6, or too many
    rejected layouts, Decision 14): a discard where the seat has drawn from the stock or the
    pile (discard pile); nothing more where it drew or placed (place-draw-place); a pass with an
    empty stock; otherwise a draw, the failed-turn draw when ``failed`` (Decision 5)."""
    turn = state.turn
    assert turn is not None
    rules = state.rules
    if rules.discard_pile and turn.drawn:
        hand = state.hands[seat]
        values = card_values(rules.point_values if rules.point_values != "none" else "tiles")
        choices = [c for c in hand if c != turn.taken or hand.count(c) > 1]
        worst = max(choices, key=lambda c: (c != JOKER, values[c] if c != JOKER else 0))
        if len(hand) == 1:  # discarding the last card goes out, as in ``_discard``
            return [CardDiscarded(seat, worst), _round_end(state, "out", seat, state.last_player)]
        return [CardDiscarded(seat, worst), *_end_turn(state, seat, ctx)]
    if turn.drawn or (turn.placed and rules.turn_shape == "place_draw_place"):
        return _end_turn(state, seat, ctx)
    if _stock_empty(state):
        return _pass_or_stall(state, seat, ctx)
    drawn = _draw_cards(state, seat, rules.failed_turn_draw if failed else 1, failed, ctx)
    if isinstance(drawn, Rejection):
        return drawn
    return drawn + _end_turn(state, seat, ctx)


# --- leaving, absence, cancelling, rematches ---------------------------------------------------


def _seat_check(state: GameState, seat: int) -> Rejection | None:
    if not 0 <= seat < state.seats:
        return _no("bad_command", f"seat is {seat}; allowed: 0 to {state.seats - 1}")
    return None


def _leave(state: GameState, cmd: Leave, ctx: Context) -> Decision:
    """Decision 15: a seat of a game still waiting is given up; the next player takes it."""
    if state.status == "new":
        return _no("game_not_started", "no such game")
    if state.status != "waiting":
        if state.status == "playing":
            return _no("not_waiting", "the game has started: resign instead of leaving")
        return _no("not_waiting", f"the game is {state.status}")
    refused = _seat_check(state, cmd.seat)
    if refused:
        return refused
    if cmd.seat >= len(state.names) or not state.names[cmd.seat]:
        return _no("not_seated", f"seat {cmd.seat} is not taken")
    if state.tournament:  # a seat left before the start would keep the table from starting
        return _no(
            "seat_reserved",
            f"this game is a table of tournament {state.tournament}: its seats stay its "
            "entrants' (withdraw from the tournament between rounds instead)",
        )
    return [SeatLeft(cmd.seat)]


def _resign(state: GameState, cmd: Resign, ctx: Context) -> Decision:
    """Decision 16: a seat leaves a game under way, during a round's turns."""
    if state.status in ("new", "waiting"):
        return _no("game_not_started", "the game has not started: leave the seat instead")
    if state.status == "finished":
        return _no("game_finished", "the game is over")
    if state.status == "cancelled":
        return _no("game_cancelled", "the game was cancelled")
    refused = _seat_check(state, cmd.seat)
    if refused:
        return refused
    if state.is_resigned(cmd.seat):
        return _no("not_seated", f"seat {cmd.seat} has resigned already")
    if state.phase != "turns":
        return _no("round_over", "the round is being scored; resign once the next one is dealt")
    return _resignation(state, cmd.seat, "resigned", ctx)


def _resignation(state: GameState, seat: int, reason: str, ctx: Context) -> list[Event]:
    """The seat resigns, and what follows at once: the round ends if one of its seats is left
    (that seat wins it); else, if it was the seat's turn, the next seat's turn begins."""
    resigned = SeatResigned(seat, reason)
    after = evolve(state, resigned)
    events: list[Event] = [resigned]
    if seat in after.round_seats and len(after.playing_seats()) <= 1:
        events.append(_round_end(after, "resigned", None, after.last_player))
    elif after.turn is not None and after.turn.seat == seat:
        events.append(_next_turn(after, after.next_seat(seat), ctx))
    return events


def _return(state: GameState, cmd: Return, ctx: Context) -> Decision:
    """Decision 17: an absent player takes its seat back."""
    if state.status != "playing":
        return _no("not_away", f"the game is {state.status}: nobody is away")
    refused = _seat_check(state, cmd.seat)
    if refused:
        return refused
    if not _away(state, cmd.seat):
        return _no("not_away", f"seat {cmd.seat}'s player is not away")
    return [SeatReturned(cmd.seat, cmd.reason)]


def _cancel(state: GameState, cmd: Cancel, ctx: Context) -> Decision:
    """Decision 18: the host cancels a game still waiting."""
    if state.status == "new":
        return _no("game_not_started", "no such game")
    if state.status != "waiting":
        return _no("not_waiting", f"the game is {state.status}: only a waiting game is cancelled")
    return [GameCancelled("host")]


def _expire(state: GameState, cmd: Expire, ctx: Context) -> Decision:
    """Decision 18: a game left waiting, or left without a move, past the service's limit."""
    if state.status == "new":
        return _no("game_not_started", "no such game")
    if state.status not in ("waiting", "playing"):
        return _no("not_waiting", f"the game is {state.status}")
    return [GameCancelled("expired")]


def _offer_rematch(state: GameState, cmd: OfferRematch, ctx: Context) -> Decision:
    """Decision 19: a seat of a finished game links the rematch the service made for it."""
    if state.status != "finished":
        return _no("game_not_over", "a rematch can only be offered once the game is over")
    refused = _seat_check(state, cmd.seat)
    if refused:
        return refused
    if state.rematch:
        return _no("rematch_offered", f"the rematch of this game is {state.rematch}")
    return [RematchOffered(cmd.seat, cmd.game_id)]


# --- between rounds ----------------------------------------------------------------------------


def _record_scores(state: GameState, cmd: RecordScores, ctx: Context) -> Decision:
    if state.phase != "scoring" or not state.rounds:
        code = "scores_recorded" if state.phase in ("next", "none") else "round_over"
        return _no(code, "there is no round waiting for its score sheet")
    last = state.rounds[-1]
    if cmd.round != last.round:
        return _no("scores_wrong", f"the round waiting for scores is {last.round}")
    expected = round_sheet(state.rules, last)
    sheet = (expected.winner, expected.went_out, expected.seats, expected.scores)
    if (cmd.winner, cmd.went_out, cmd.seats, cmd.scores) != sheet:
        return _no("scores_wrong", f"the score sheet of round {last.round} should be {sheet}")
    return [ScoresRecorded(cmd.round, cmd.winner, cmd.went_out, cmd.seats, cmd.scores)]


def _continue(state: GameState, cmd: Continue, ctx: Context) -> Decision:
    if state.phase != "next":
        return _no("no_scores_yet", "the round's score sheet is not recorded yet")
    shuffle = _shuffle(state, ctx)
    if isinstance(shuffle, Rejection):
        return shuffle
    sheets = [recorded_sheet(r) for r in state.rounds]
    gone = {seat: number for seat, number in enumerate(state.resigned) if number}
    status = match_result(state.rules, state.seats, sheets, gone)
    if status.over:
        if ctx.seed is None:
            return _no("bad_seed", "the match is over and no seed is given to reveal")
        table = status.standings
        return [
            MatchEnded(status.winners, table.totals, table.outs, table.wins),
            SeedRevealed(ctx.seed.hex()),
        ]
    seats = status.next_seats
    number = state.round + 1
    dealer, starter = rotation(state, number, seats)
    return [deal(state, shuffle, number, seats, dealer, starter), _next_turn(state, starter, ctx)]


def round_sheet(rules: RuleSet, result: RoundResult) -> RoundScore:
    """The pure score sheet of a finished round (what the scoring role must record)."""
    return score_round(
        rules,
        [result.hands[s] for s in result.seats],
        result.out,
        [result.redeemed[s] for s in result.seats],
        result.last_player,
        seats=result.seats,
        resigned=result.resigned,
    )


_DECIDERS: dict[type, Callable[[GameState, Any, Context], Decision]] = {
    CreateGame: _create,
    Sit: _sit,
    Start: _start,
    Play: _play,
    Draw: _draw,
    End: _end,
    Pass: _pass,
    Discard: _discard,
    Timeout: _timeout,
    RecordScores: _record_scores,
    Continue: _continue,
    Leave: _leave,
    Resign: _resign,
    Return: _return,
    Cancel: _cancel,
    Expire: _expire,
    OfferRematch: _offer_rematch,
}


_TURN_COMMANDS = (Play, Draw, End, Pass, Discard)


def decide(state: GameState, command: Command, ctx: Context | None = None) -> Decision:
    """The events ``command`` produces on ``state``, or why it is refused.

    Who sends a seat's command (``Context.bot``) matters twice: a bot may make a turn's moves
    only for a seat it plays now, and its player's own move on the seat of an absent player
    takes the seat back first (``SeatReturned``, reason ``moved``; Decision 17)."""
    ctx = ctx or Context()
    decider = _DECIDERS[type(command)]
    if ctx.bot is not None:
        if not isinstance(command, _TURN_COMMANDS):
            return _no("not_bot_seat", "a bot makes a turn's moves only")
        if state.bot_at(command.seat) != ctx.bot:
            return _no("not_bot_seat", f"bot {ctx.bot!r} does not play seat {command.seat}")
    elif isinstance(command, _TURN_COMMANDS) and _away(state, command.seat):
        back = SeatReturned(command.seat, "moved")
        after = decider(evolve(state, back), command, ctx)
        return after if isinstance(after, Rejection) else [back, *after]
    return decider(state, command, ctx)


def _away(state: GameState, seat: int) -> bool:
    """Whether ``seat``'s player is away (its seat handed to a bot, or its turns skipped)."""
    return 0 <= seat < len(state.away) and state.away[seat] is not None
