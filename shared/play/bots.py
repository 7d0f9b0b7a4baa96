"""Bots: players that decide from their own ``SeatView`` only and send the commands a person
would. Every play a bot proposes is checked with the rules core first, so a bot never sends an
illegal layout by mistake; the ``clumsy`` bot sends one on purpose now and then, which is how
self-play exercises rejected attempts and failed-turn draws, and the ``stubborn`` bot insists
until the referee ends its turn (``max_rejections``).

A bot is anything with ``name`` and ``choose(view, rng) -> Command``; a stronger solver-driven
bot plugs in by implementing the same protocol and registering in ``BOTS``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from shared.core.cards import JOKER, make_card
from shared.core.commands import Command, Discard, Draw, End, Pass, Play
from shared.core.events import Cards, Melds
from shared.core.judgement import judge_play
from shared.core.melds import card_values, readings
from shared.core.views import SeatView
from shared.solver import solve


class Bot(Protocol):
    """A player program: sees one seat's view, returns that seat's next command."""

    name: str

    def choose(self, view: SeatView, rng: random.Random) -> Command: ...


def hand_melds(hand: Cards, view: SeatView) -> Iterator[Cards]:
    """Candidate melds made from the hand alone: sets, and runs with jokers filling gaps."""
    rules = view.rules
    jokers = hand.count(JOKER)
    naturals = sorted(set(c for c in hand if c != JOKER))
    by_rank: dict[int, list[int]] = {}
    by_suit: dict[int, set[int]] = {}
    for card in naturals:
        by_rank.setdefault(card % 13 + 1, []).append(card)
        by_suit.setdefault(card // 13, set()).add(card % 13 + 1)
    for cards in by_rank.values():
        size = min(len(cards), rules.set_max)
        if size >= 3:
            yield tuple(cards[:size])
        elif jokers and size + min(jokers, 3 - size) >= 3:
            yield (*cards, *(JOKER,) * (3 - size))
    limit = min(rules.run_max, 13)
    for suit, ranks in by_suit.items():
        for start in range(1, 14):
            if start not in ranks:
                continue
            used: list[int] = []
            missing = 0
            for length in range(1, limit + 1):
                rank = (start - 1 + length - 1) % 13 + 1
                if rules.ace == "low" and start + length - 1 > 13:
                    break
                if rank in ranks:
                    used.append(make_card(rank, suit))
                elif missing < jokers:
                    missing += 1
                    used.append(JOKER)
                else:
                    break
                if length >= 3 and used[-1] != JOKER:
                    yield tuple(used)


def _take(hand: list[int], meld: Cards) -> bool:
    """Remove ``meld``'s cards from ``hand`` if all are there."""
    need = list(meld)
    for card in need:
        if card not in hand:
            return False
        hand.remove(card)
    return True


def disjoint_melds(hand: Cards, view: SeatView, rng: random.Random | None) -> list[Cards]:
    """Greedy: the longest hand melds first (random order among equals when ``rng`` given)."""
    options = list(dict.fromkeys(hand_melds(hand, view)))
    if rng is not None:
        rng.shuffle(options)
    options.sort(key=len, reverse=True)
    left = list(hand)
    chosen = []
    for meld in options:
        trial = list(left)
        if _take(trial, meld) and readings(meld, view.rules):
            chosen.append(meld)
            left = trial
    return chosen


def lay_offs(table: list[list[int]], hand: list[int], view: SeatView) -> int:
    """Add hand cards to table melds wherever the meld stays valid; returns cards placed."""
    placed = 0
    progress = True
    while progress:
        progress = False
        for card in list(dict.fromkeys(hand)):
            for meld in table:
                trial = [*meld, card]
                if readings(trial, view.rules):
                    meld.append(card)
                    hand.remove(card)
                    placed += 1
                    progress = True
                    break
    return placed


def opening_value(melds: list[Cards], view: SeatView) -> int:
    """What melds count towards an opening (each at its best reading)."""
    total = 0
    for meld in melds:
        found = readings(meld, view.rules)
        total += found[0].value if found else 0
    return total


def _legal(view: SeatView, layout: Melds) -> bool:
    return judge_play(view.rules, view.table, view.hand, view.opened, layout).legal


def greedy_layout(view: SeatView, rng: random.Random | None = None) -> Melds | None:
    """The most cards this heuristic finds to place: new melds from the hand, then lay-offs."""
    rules = view.rules
    melds = disjoint_melds(view.hand, view, rng)
    needs_opening = not view.opened and rules.opening_points > 0
    if needs_opening:
        if not melds or opening_value(melds, view) < rules.opening_points:
            return None
        layout = (*view.table, *melds)
        return layout if _legal(view, layout) else None
    table = [list(m) for m in view.table] + [list(m) for m in melds]
    hand = list(view.hand)
    for meld in melds:
        _take(hand, meld)
    lay_offs(table, hand, view)
    layout = tuple(tuple(m) for m in table)
    if len(hand) == len(view.hand):
        return None
    return layout if _legal(view, layout) else None


def extending_cards(meld: Cards, cards: Sequence[int]) -> list[int]:
    """The ``cards`` that could lengthen ``meld`` at all: jokers, and cards sharing a rank (a
    set) or a suit (a run) with every natural of it. Cheap, so a bot reads only the lay-offs
    that pass (most of a late table's pairs of a meld and a card do not)."""
    naturals = [c for c in meld if c != JOKER]
    if not naturals:
        return list(cards)
    ranks = {c % 13 for c in naturals}
    suits = {c // 13 for c in naturals}
    rank = ranks.pop() if len(ranks) == 1 else -1
    suit = suits.pop() if len(suits) == 1 else -1
    return [c for c in cards if c == JOKER or c % 13 == rank or c // 13 == suit]


def random_layout(view: SeatView, rng: random.Random) -> Melds | None:
    """One random legal move: a single hand meld, or a single lay-off.

    The candidates (hand melds, and every table meld with every card of the hand) are shuffled
    first and checked only until a legal one turns up: each valid move is as likely as if all
    were checked, at a fraction of the cost (the load tool's bots move hundreds of times a
    second, and their CPU counts against the machine being measured)."""
    rules = view.rules
    needs_opening = not view.opened and rules.opening_points > 0
    candidates: list[tuple[int, Any]] = [
        (-1, meld) for meld in dict.fromkeys(hand_melds(view.hand, view))
    ]
    if not needs_opening:
        cards = sorted(set(view.hand))
        candidates += [
            (i, card) for i, meld in enumerate(view.table) for card in extending_cards(meld, cards)
        ]
    rng.shuffle(candidates)
    checked = 0
    for where, what in candidates:
        if where < 0:
            if needs_opening and opening_value([what], view) < rules.opening_points:
                continue
            layout: Melds = (*view.table, what)
        else:
            meld = view.table[where]
            if not readings((*meld, what), rules):
                continue
            layout = (*view.table[:where], (*meld, what), *view.table[where + 1 :])
        if _legal(view, layout):
            return layout
        checked += 1
        if checked == 8:
            return None
    return None


def can_draw(view: SeatView) -> bool:
    """Whether the stock can give a card: it holds one, or (discard-pile variant) the pile may
    still be shuffled into it (Decision 10 and ``max_reshuffles``)."""
    if view.stock:
        return True
    rules = view.rules
    limit = rules.max_reshuffles
    return (
        rules.discard_pile and view.discard_count > 1 and (limit is None or view.reshuffles < limit)
    )


def _finish_turn(view: SeatView, rng: random.Random) -> Command:
    """What a seat does when it will not (or cannot) play now."""
    rules = view.rules
    if rules.discard_pile:
        if not view.drawn:
            if not can_draw(view):
                return Pass(view.seat)
            return Draw(view.seat, "stock")
        values = card_values("tiles")
        hand = [c for c in view.hand if c != view.taken or view.hand.count(c) > 1]
        naturals = [c for c in hand if c != JOKER] or hand
        return Discard(view.seat, max(naturals, key=lambda c: values[c] if c != JOKER else 0))
    if rules.turn_shape == "place_draw_place" and (view.placed or view.drawn):
        return End(view.seat)
    if not can_draw(view):
        return Pass(view.seat)
    return Draw(view.seat, "stock")


def _turn(view: SeatView, rng: random.Random, find: Callable[[], Melds | None]) -> Command:
    rules = view.rules
    if rules.discard_pile and not view.drawn:
        return _finish_turn(view, rng)
    if rules.discard_pile and view.placed:
        return _finish_turn(view, rng)
    layout = find()
    if layout is not None:
        return Play(view.seat, layout)
    return _finish_turn(view, rng)


class RandomBot:
    """Plays one random legal move when it finds one, else draws."""

    name = "random"

    def choose(self, view: SeatView, rng: random.Random) -> Command:
        return _turn(view, rng, lambda: random_layout(view, rng))


class GreedyBot:
    """Places as many cards as it can find this turn: hand melds, then lay-offs."""

    name = "greedy"

    def choose(self, view: SeatView, rng: random.Random) -> Command:
        return _turn(view, rng, lambda: greedy_layout(view, rng))


class ClumsyBot:
    """A random player that now and then proposes an illegal layout (to exercise rejections)."""

    name = "clumsy"
    mistake_rate = 0.15

    def choose(self, view: SeatView, rng: random.Random) -> Command:
        may_play = not (view.rules.discard_pile and not view.drawn)
        if may_play and view.hand and view.rejected < 2 and rng.random() < self.mistake_rate:
            card = rng.choice(view.hand)
            return Play(view.seat, (*view.table, (card,)))
        return _turn(view, rng, lambda: random_layout(view, rng))


class StubbornBot:
    """A random player that, once refused, often insists with more illegal layouts: it runs
    into ``max_rejections`` (Decision 14) now and then, so self-play exercises forfeited turns."""

    name = "stubborn"
    mistake_rate = 0.1
    insist_rate = 0.75

    def choose(self, view: SeatView, rng: random.Random) -> Command:
        may_play = not (view.rules.discard_pile and not view.drawn)
        rate = self.insist_rate if view.rejected else self.mistake_rate
        if may_play and view.hand and rng.random() < rate:
            card = rng.choice(view.hand)
            return Play(view.seat, (*view.table, (card,)))
        return _turn(view, rng, lambda: random_layout(view, rng))


BOTS: dict[str, Callable[[], Bot]] = {
    "random": RandomBot,
    "greedy": GreedyBot,
    "clumsy": ClumsyBot,
    "stubborn": StubbornBot,
}


def solver_layout(view: SeatView) -> Melds | None:
    """The exact solver's play of the most cards (an opening when the seat has not opened)."""
    play = solve(view.rules, view.table, view.hand, view.opened)
    return play.layout if play.found else None


class SolverBot:
    """Plays the exact solver's best play each turn: the most cards, fewest jokers."""

    name = "solver"

    def choose(self, view: SeatView, rng: random.Random) -> Command:
        return _turn(view, rng, lambda: solver_layout(view))


def patient_layout(view: SeatView, danger: int = 0) -> Melds | None:
    """The solver's play of the most cards, but without the hand's jokers while a play without
    them exists, unless the jokers let the seat go out (see ``PatientBot``); None to draw.
    ``danger``: play the jokers as well once an opponent holds this many cards or fewer (0:
    never; the measured default)."""
    rules = view.rules
    best = solve(rules, view.table, view.hand, view.opened)
    if not best.found or JOKER not in best.played:
        return best.layout if best.found else None
    if len(best.played) == len(view.hand) or not view.opened:
        return best.layout  # going out; or the opening, which uses jokers only where needed
    others = [n for s, n in enumerate(view.hand_counts) if s != view.seat]
    if others and min(others) <= danger:
        return best.layout
    naturals = [c for c in view.hand if c != JOKER]
    held = solve(rules, view.table, naturals, view.opened)
    return held.layout if held.found else best.layout


class PatientBot:
    """The exact solver's play of the most cards, holding its jokers back. The most-cards play
    lays a joker off wherever one fits (it is one card more), which spends the card that turns
    any pair in the hand into a meld for one that only saves a draw. This bot plays the most
    natural cards it can instead and keeps its jokers until they let it go out, or until they
    are the only play it has (rather than draw). Measured against ``solver`` (docs/solver.md, "Hints
    and bots"): over 2,000 two-player rummikub games it wins no more (999 to 1,001); holding
    back lay-offs as well (one a turn instead of drawing) won less (181 of 400), so it does
    not."""

    name = "patient"
    danger = 0

    def choose(self, view: SeatView, rng: random.Random) -> Command:
        return _turn(view, rng, lambda: patient_layout(view, self.danger))


BOTS["solver"] = SolverBot
BOTS["patient"] = PatientBot


def hoard_layout(view: SeatView, cap: int = 16, margin: int = 10) -> Melds | None:
    """The solver's play of the most cards, but only when it empties the hand, or opens, or the
    hand holds more than ``cap`` cards, or the stock is down to ``margin`` cards (or cannot
    give one); otherwise None: draw and keep the hand (see ``HoarderBot``)."""
    best = solve(view.rules, view.table, view.hand, view.opened)
    if not best.found:
        return None
    if len(best.played) == len(view.hand) or not view.opened:
        return best.layout
    if len(view.hand) > cap or view.stock <= margin or not can_draw(view):
        return best.layout
    return None


class HoarderBot:
    """Opens as soon as it can, then draws every turn, holding its plays back, until the
    solver's play empties its hand (it goes out in one turn); it plays the most cards as
    ``solver`` does only when its hand passes ``cap`` cards or the stock runs low.

    Why it wins: in a two-player race to go out, the cards that decide the race are the stuck
    ones (no play places them), and what frees them is new material: a drawn card that makes a
    meld with them, directly or by rearranging the table. ``solver`` spends every turn on
    which it can place something placing it, and so draws only on the turns it is stuck: near
    the end it alternates draw, play the drawn card, draw, and sees a new card every other
    turn. This bot sees one every turn, keeps every card it holds as material for combinations
    (a held card is as placeable later as now, unless an opponent's card takes its place), and
    leaves the table poorer for the opponent. Going out needs the whole hand placed in one
    turn, which the exact solver finds. Playing the drawn cards once the opponent is close to
    going out (3 cards or fewer) measured worse (111 of 200 against 141 of 200 on the same
    deals), so the bot does not; the cap (16) keeps the solver fast and bounds the penalty.

    Measured against ``solver`` (docs/solver.md, "Hints and bots"): 2,000 two-player rummikub games,
    one round each, seeds 1-8 of ``rummy simulate --rules rummikub --players 2 --games 250
    --bots hoarder,solver --options '{"match_rounds": 1}' --same-deals --no-check --seed N``:
    1,410 wins to 590, win rate 0.705 (95% interval 0.685-0.725), mean penalty 9.40 against
    15.44, deals won from both seats 477 against 67. Caps of 10 and 30 won about as often as 16
    (135 and 137 of 200 against 141), a cap of 6 less (114).
    """

    name = "hoarder"
    cap = 16
    margin = 10

    def choose(self, view: SeatView, rng: random.Random) -> Command:
        return _turn(view, rng, lambda: hoard_layout(view, self.cap, self.margin))


BOTS["hoarder"] = HoarderBot
