"""Dealing: who deals and who starts (Decision 11), the deal of a round, the pile turned into the
stock (Decision 10), and the score sheets that say who plays the next round.

Every random choice asks a :class:`~shared.core.shuffle.Shuffle` for an order. ``decide`` passes
the seeded one. :class:`RecordedShuffle` answers with the orders that give the outcomes a log
records, so that an audit can re-derive every rule of a game whose seed is still secret (all but
the shuffle itself, which only the seed can check). Both directions live here, next to each
other, because the second is the first read backwards.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from shared.core.cards import JOKER, deck
from shared.core.events import Cards, Event, RoundDealt, StarterChosen, StockReshuffled
from shared.core.scoring import RoundScore
from shared.core.shuffle import Shuffle
from shared.core.state import GameState, RoundResult


def choose_starter(state: GameState, shuffle: Shuffle) -> StarterChosen:
    """Decision 11: cut for the dealer (robbers), draw for the starter (rummikub), or the
    shuffle's pick. A seat that cuts a joker cuts again; ties cut again among the tied."""
    method = state.rules.starter
    seats = list(range(state.seats))
    if method == "random":
        first = shuffle.order(seats, "starter")[0]
        return StarterChosen(method, (), None, first)
    contenders = seats
    attempts: list[tuple[tuple[int, int], ...]] = []
    while len(contenders) > 1:
        cards = iter(shuffle.order(deck(state.rules.jokers), f"{method}/{len(attempts) + 1}"))
        drawn: list[tuple[int, int]] = []
        best: dict[int, int] = {}
        for seat in contenders:
            card = next(cards)
            drawn.append((seat, card))
            while card == JOKER:
                card = next(cards)
                drawn.append((seat, card))
            best[seat] = card % 13 + 1
        attempts.append(tuple(drawn))
        top = max(best.values())
        contenders = [s for s in contenders if best[s] == top]
    winner = contenders[0]
    if method == "cut":
        return StarterChosen(method, tuple(attempts), winner, (winner + 1) % state.seats)
    return StarterChosen(method, tuple(attempts), None, winner)


def _deal_order(seats: Sequence[int], starter: int) -> tuple[int, ...]:
    """The seats in the order they are dealt to: the starter first."""
    at = list(seats).index(starter)
    return (*seats[at:], *seats[:at])


def deal(
    state: GameState,
    shuffle: Shuffle,
    number: int,
    seats: tuple[int, ...],
    dealer: int | None,
    starter: int,
) -> RoundDealt:
    """Deal round ``number`` to ``seats`` from the shuffled deck, starter first; then the pile's
    first card (discard-pile variant), then the stock."""
    rules = state.rules
    cards = shuffle.order(deck(rules.jokers), f"deal/{number}")
    size = rules.hand_size_for(len(seats))
    order = _deal_order(seats, starter)
    hands: list[Cards] = [()] * state.seats
    for i, seat in enumerate(order):
        hands[seat] = tuple(sorted(cards[i * size : (i + 1) * size]))
    rest = cards[len(order) * size :]
    discard = tuple(rest[:1]) if rules.discard_pile else ()
    stock = tuple(rest[len(discard) :])
    return RoundDealt(number, seats, dealer, starter, tuple(hands), stock, discard)


def reshuffled(state: GameState, shuffle: Shuffle) -> StockReshuffled:
    """The pile under its top card shuffled under the stock (Decision 10)."""
    refill = shuffle.order(state.discard[:-1], f"reshuffle/{state.turn_number}")
    return StockReshuffled((*state.stock, *refill))


def recorded_sheet(result: RoundResult) -> RoundScore:
    """The score sheet recorded for a finished round, as ``match_result`` takes it."""
    assert result.winner is not None
    return RoundScore(result.seats, result.winner, result.went_out, result.scores)


def rotation(state: GameState, number: int, seats: tuple[int, ...]) -> tuple[int | None, int]:
    """Dealer and starter of round ``number``: the first round's move one seat on each round
    (Decision 11); in a round among some seats only, the next of them at or after that seat."""
    shift = number - 1
    if state.first_dealer is not None:
        dealer = (state.first_dealer + shift) % state.seats
        return dealer, _at_or_after(seats, (dealer + 1) % state.seats, state.seats)
    assert state.first_starter is not None
    return None, _at_or_after(seats, (state.first_starter + shift) % state.seats, state.seats)


def _at_or_after(seats: tuple[int, ...], seat: int, total: int) -> int:
    for step in range(total):
        candidate = (seat + step) % total
        if candidate in seats:
            return candidate
    raise ValueError("no seat plays this round")


class RecordedShuffle:
    """A shuffle that answers with the orders giving the outcomes recorded in ``events`` (the
    events from the command on: its cut, deal or reshuffle). An order that is not a shuffle of
    the items asked about (a deal that is not one whole deck, say) is answered with the items
    unshuffled, so the decision then differs from the record instead of repeating it."""

    def __init__(self, events: Sequence[Event]) -> None:
        self.events = events

    def order(self, items: Sequence[int], purpose: str) -> list[int]:
        wanted = self._recorded(items, purpose)
        if wanted is not None and Counter(wanted) == Counter(items):
            return wanted
        return list(items)

    def _recorded(self, items: Sequence[int], purpose: str) -> list[int] | None:
        kind, _, number = purpose.partition("/")
        for event in self.events:
            if isinstance(event, StarterChosen):
                if purpose == "starter" and event.method == "random":
                    return [event.starter, *(s for s in items if s != event.starter)]
                if kind == event.method and number.isdigit():
                    return _cut_order(items, event, int(number))
            elif isinstance(event, RoundDealt) and purpose == f"deal/{event.round}":
                return _dealt_order(event)
            elif isinstance(event, StockReshuffled) and kind == "reshuffle":
                if len(items) > len(event.stock):
                    return None
                return list(event.stock[len(event.stock) - len(items) :])
        return None


def _cut_order(items: Sequence[int], chosen: StarterChosen, attempt: int) -> list[int] | None:
    """A deck whose first cards are the ones cut in ``attempt`` (counted from 1)."""
    if not 1 <= attempt <= len(chosen.draws):
        return None
    drawn = [card for _, card in chosen.draws[attempt - 1]]
    left = Counter(items)
    left.subtract(drawn)
    if min(left.values(), default=0) < 0:
        return None
    return [*drawn, *left.elements()]


def _dealt_order(dealt: RoundDealt) -> list[int] | None:
    """A deck that ``deal`` turns into these hands, pile and stock."""
    if dealt.starter not in dealt.seats or not all(0 <= s < len(dealt.hands) for s in dealt.seats):
        return None
    order = _deal_order(dealt.seats, dealt.starter)
    hands = [card for seat in order for card in dealt.hands[seat]]
    return [*hands, *dealt.discard, *dealt.stock]
