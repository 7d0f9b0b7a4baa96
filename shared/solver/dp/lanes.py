"""A sharper upper bound for the solver's DP: one that reads the lanes of a state.

``bounds.upper_bounds`` counts every hand card still to come as placed, whatever the state's
open runs. Measured on 40-card tables, about 99 in 100 of the states the DP keeps at the
optimum's own floor have no way to reach it; most die a few ranks later, when a run they
opened or a card they skipped finds no place. This bound sees that earlier.

It relaxes the problem suit by suit: each suit keeps its two lanes exactly (the same lane
moves as the DP, mandatory cards placed, runs closed legally at the end), while sets are free
for any of its naturals at a rank where enough suits are present, and each suit may use all
the jokers left on its own lanes and in its own sets. A suit giving m naturals to the sets of a
rank is in m sets, each holding two more cards, and another suit gives each of them at most
one: the jokers those sets need at least (``set_gap``) are spent from the suit's jokers (a
joker stands on one lane or in one set, never both). Every real arrangement, read suit by suit,
is one of these relaxed ones, so the sum over the suits of the most their hand naturals can
still score, plus the jokers' own part of ``upper_bounds``, is an upper bound.

Where it is loose (measured on the slowest 40-card positions): every suit may count
the same jokers, and a set may count on a card of another suit that is in a run of its own.
The linear relaxation of the meld integer program (``tests/solver/oracle.py`` with its
integrality dropped) rounds down to the optimum on all 27 of them, where this bound at the root
is one to four cards above it. A Lagrangian bound (jokers shared out among the suits, each set
joker brought by one suit, a multiplier per rank and suit on "a suit's set naturals need two
partners each") came within about a card of the optimum after 60 subgradient rounds steered
by the optimum itself; with 30 rounds and a step target it could know, most positions stayed
above the next whole card. A round costs 1.5-2.5 ms in Python: too slow to pay for itself.

A state whose suit cannot be completed at all (a run that cannot be closed, a
table card with no place) gets ``UNREACHABLE``.

The tables are filled lazily, per suit, rank and lane pair, as the searches ask.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from shared.solver.dp.program import (
    UNREACHABLE,
    Pairs,
    Problem,
    key_layout,
    machinery,
    set_joker_counts,
)

Bound = Callable[[int, int], int]


@cache
def set_gap(counts: tuple[int, ...], suit: int) -> tuple[int, int, int]:
    """The jokers the sets of a rank need at least when ``suit`` gives them 0, 1 or 2 naturals
    (``counts``: the naturals of each suit at that rank, two or more counted as two): each of
    its m sets holds two cards besides its own, and another suit gives each of them at most
    one."""
    gaps = [max(0, 2 * m - sum(min(m, counts[t]) for t in range(4) if t != suit)) for m in range(3)]
    return gaps[0], gaps[1], gaps[2]


class LaneBound:
    """Per suit, rank and lane pair: the most that suit's hand naturals can add from that rank
    on (index: jokers left), under the suit-by-suit relaxation."""

    def __init__(self, p: Problem, joker_rows: list[list[list[int]]]) -> None:
        self.p = p
        self.pairs: Pairs = machinery(p.cfg)[1]
        self.jmax = p.jokers_max
        lay = key_layout(p.cfg)
        self.width, self.mask, self.c1s = lay.width, lay.mask, lay.c1s
        self.joker_rows = joker_rows
        # per rank and suit, by the naturals m (1 or 2) the suit gives to the sets of the rank:
        # the jokers those sets need at least. Each of the m sets holds two cards besides the
        # suit's own, and another suit gives at most one card to each of them.
        counts = [tuple(min(2, p.table[r][t] + p.hand[r][t]) for t in range(4)) for r in range(14)]
        self.set_gap = [[set_gap(counts[r], s) for s in range(4)] for r in range(14)]
        # per suit and rank (1..14): lane pair -> best by jokers left; shared by the problems
        # whose suit reads the same (a position's searches differ in a few cards at most)
        self.memo = [self._tables(suit) for suit in range(4)]
        self.bounds: dict[tuple[int, int], Bound] = {}

    def _tables(self, suit: int) -> list[dict[int, list[int]]]:
        p = self.p
        key = (
            p.cfg,
            self.jmax,
            tuple(p.table[r][suit] for r in range(1, 14)),
            tuple(p.hand[r][suit] for r in range(1, 14)),
            tuple(p.nat_weight[1:14]),
            tuple(row[suit] for row in self.set_gap),
        )
        found = _TABLES.get(key)
        if found is None:
            if len(_TABLES) > 128:  # a position asks for a few dozen at most
                _TABLES.clear()
            found = _TABLES[key] = [{} for _ in range(15)]
        return found

    def suit(self, suit: int, rank: int, pair: int) -> list[int]:
        """The most the hand naturals of ``suit`` at ``rank`` and above can add when its lanes
        enter ``rank`` as ``pair``, by jokers left (``UNREACHABLE``: no completion)."""
        found = self.memo[suit][rank].get(pair)
        if found is not None:
            return found
        jmax = self.jmax
        if rank == 14:
            found = [0 if self.pairs.end_ok(pair) else UNREACHABLE] * (jmax + 1)
        else:
            p = self.p
            weight = p.nat_weight[rank]
            gap = self.set_gap[rank][suit]
            found = [UNREACHABLE] * (jmax + 1)
            moves = _moves(self.pairs, pair, p.table[rank][suit], p.hand[rank][suit])
            filled = self.memo[suit][rank + 1]
            for new, jok, to_sets, used in moves:
                spent = jok + gap[to_sets]  # the sets' jokers are not the lanes' (distinct)
                if spent > jmax:
                    continue
                after = filled.get(new) or self.suit(suit, rank + 1, new)
                gain = weight * used
                for left in range(spent, jmax + 1):
                    value = after[left - spent] + gain
                    if value > found[left]:
                        found[left] = value
            found = [v if v > UNREACHABLE // 2 else UNREACHABLE for v in found]
        self.memo[suit][rank][pair] = found
        return found

    def at(self, rank: int, suit: int) -> Bound:
        """The bound after suit ``suit`` of ``rank`` has been decided (4: after the sets; rank
        0: before anything), as a function of a state key and the jokers it has used: the
        score still to come at most (as ``upper_bounds`` counts it)."""
        found = self.bounds.get((rank, suit))
        if found is None:
            found = self.bounds[(rank, suit)] = self._at(rank, suit)
        return found

    def release(self) -> None:
        """Forget the bound functions of ``at``: each refers back to this object (it fills the
        suit tables as it goes), and the cycle would outlive the search."""
        self.bounds.clear()

    def _at(self, rank: int, suit: int) -> Bound:
        p = self.p
        if rank == 0:
            ranks = [1, 1, 1, 1]
            jokers = self.joker_rows[0][4]
        else:
            ranks = [rank + 1 if s <= suit else rank for s in range(4)]
            jokers = self.joker_rows[rank][suit]
        if rank and suit < 4:
            room = tuple(min(2, p.table[rank][s] + p.hand[rank][s]) for s in range(suit + 1, 4))
            need = set_need(room, self.jmax, p.cfg.set_max)
        else:
            need = _NO_SETS
        m0, m1, m2, m3 = (self.memo[s][ranks[s]] for s in range(4))
        r0, r1, r2, r3 = ranks
        width, mask, jmax, c1s = self.width, self.mask, self.jmax, self.c1s
        w2, w3 = 2 * width, 3 * width
        fill = self.suit
        # The jokers the pending sets of ``rank`` need are lost to the suits already decided
        # (their tables start at the next rank), not to the suits still to come at ``rank``
        # (they may give naturals to those very sets).
        d0, d1, d2, d3 = (rank > 0 and s <= suit for s in range(4))

        def bound(key: int, used: int) -> int:
            left = jmax - used
            after = left - need[(key >> c1s) & 63]
            if after < 0:
                return UNREACHABLE
            p0 = key & mask
            p1 = (key >> width) & mask
            p2 = (key >> w2) & mask
            p3 = (key >> w3) & mask
            return (
                jokers[used]
                + (m0.get(p0) or fill(0, r0, p0))[after if d0 else left]
                + (m1.get(p1) or fill(1, r1, p1))[after if d1 else left]
                + (m2.get(p2) or fill(2, r2, p2))[after if d2 else left]
                + (m3.get(p3) or fill(3, r3, p3))[after if d3 else left]
            )

        return bound


_TABLES: dict[tuple[object, ...], list[dict[int, list[int]]]] = {}


def forget_tables() -> None:
    """Drop the suit tables of the positions solved so far (see ``shared.solver.goals.solve``)."""
    _TABLES.clear()


_NO_SETS = [0] * 64


@cache
def set_need(room: tuple[int, ...], jmax: int, set_max: int) -> list[int]:
    """By the set counts of a state key (``(c2 << 3) | c1``: suits giving one and two naturals
    to the sets of the rank so far), the fewest jokers the sets of the rank will take whatever
    the suits still to come give them (``room``: at most this many naturals each); ``jmax + 1``
    when no sets can be made."""
    ends: list[tuple[int, int]] = [(0, 0)]
    for most in room:  # what the suits still to come may add
        ends = [
            (a + d1, b + d2) for a, b in ends for d1, d2 in ((0, 0), (1, 0), (0, 1))[: most + 1]
        ]
    need = [jmax + 1] * 64
    for c1 in range(5):
        for c2 in range(5 - c1):
            fewest = jmax + 1
            for e1, e2 in ends:
                if c1 + e1 + c2 + e2 <= 4:
                    counts = set_joker_counts(c1 + e1, c2 + e2, set_max)
                    if counts:
                        fewest = min(fewest, counts[0])
            need[c2 << 3 | c1] = fewest
    return need


_MOVES: dict[tuple[Pairs, int, int, int], list[tuple[int, int, int, int]]] = {}


def _moves(pairs: Pairs, pair: int, table: int, hand: int) -> list[tuple[int, int, int, int]]:
    """One suit's moves at one rank for the bound: (new pair, jokers on its lanes, naturals to
    sets, hand naturals placed), without the moves another one beats: a lane pair at least as
    good (``_at_least``: the bound only grows with it), no more jokers, no more naturals to
    sets, and as many hand naturals or more."""
    key = (pairs, pair, table, hand)  # the object, not its id: an id may be reused
    found = _MOVES.get(key)
    if found is None:
        best: dict[tuple[int, int, int], int] = {}
        for new, jok, to_sets, used, _ in pairs.suit_options(pair, table, hand):
            alike = (new, jok, to_sets)
            if best.get(alike, -1) < used:
                best[alike] = used
        moves = [(*alike, used) for alike, used in best.items()]
        found = []
        for i, move in enumerate(moves):
            new, jok, sets, used = move
            if not any(
                j != i  # by position: compiled, tuples of ints are values without identity
                and other[1] <= jok
                and other[2] <= sets
                and other[3] >= used
                and _at_least(pairs, other[0], new)
                for j, other in enumerate(moves)
            ):
                found.append(move)
        _MOVES[key] = found
    return found


def _at_least(pairs: Pairs, better: int, pair: int) -> bool:
    """The lane pair ``better`` dominates ``pair`` or is it, lane by lane in either order
    (read from the lane states' relation: no pair codes are made)."""
    if better == pair:
        return True
    a, b = pairs.pairs[better]
    c, d = pairs.pairs[pair]
    up = pairs.lanes.up
    return (a in up[c] and b in up[d]) or (a in up[d] and b in up[c])
