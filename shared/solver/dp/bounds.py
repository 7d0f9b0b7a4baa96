"""Upper bounds on what a state of the DP (``program``) can still score: the tables the searches
under a floor (``search``, ``ladder``) drop states by.

Two bounds, computed together once per problem and kept until the position is solved
(``forget_bounds``): the plain one (``upper_bounds``), which counts every hand card still to
come as placed whatever the state's lanes, and the sharper one that reads them (``lane_bound``,
``lanes.LaneBound``). The jokers' part of the plain bound (``joker_rows``) is the sharper
bound's too.
"""

from __future__ import annotations

from shared.solver.dp.lanes import LaneBound
from shared.solver.dp.program import (
    UNREACHABLE,
    Problem,
    initial_states,
    key_layout,
    machinery,
)

_BOUNDS: dict[
    tuple[object, ...], tuple[list[list[list[int]]], list[list[list[int]]], LaneBound]
] = {}


def forget_bounds() -> None:
    """Drop the bound tables of the positions solved so far (``_bound_tables``; see
    ``shared.solver.goals.solve``). Each lane bound's functions refer back to it (a reference
    cycle): it is released first, so that reference counting frees the tables at once instead
    of leaving tens of thousands of objects to the cyclic collector."""
    for _, _, lanes in _BOUNDS.values():
        lanes.release()
    _BOUNDS.clear()


def _joker_need(p: Problem) -> list[int]:
    """need[r]: the fewest jokers that the mandatory cards of rank r or more need, placed at
    ranks r - 2 or more (index 1..16; 0 beyond 13): after rank R is decided, need[R + 3] are
    still to come. A card of
    rank r that fits no joker-free meld (too few suits for a set, a gap in every window of
    three ranks around it for a run, counting every card of the problem as there) lies in a
    meld whose jokers stand at ranks r - 2 .. r + 2 (a set's at r, a run's within the window of
    three around r it holds), at least as many as its window or set lacks. Cards five ranks or
    more apart need different jokers: the most over such cards, summed (an interval schedule).
    Only without ace wrap (no meld crosses K-A); else no need."""
    need = [0] * 17
    if p.cfg.wrap:
        return need

    def count(r: int, s: int) -> int:
        return p.table[r][s] + p.hand[r][s] if 1 <= r <= 13 else 0

    lacking = [0] * 14
    for rank in range(1, 14):
        for suit in range(4):
            if not p.table[rank][suit]:
                continue
            fewest = 3 - sum(1 for s in range(4) if count(rank, s))
            for first in range(max(rank - 2, 1), min(rank, 11) + 1):
                lack = sum(1 for r in range(first, first + 3) if not count(r, suit))
                fewest = min(fewest, lack)
            lacking[rank] = max(lacking[rank], fewest)
    for rank in range(13, 0, -1):
        need[rank] = max(need[rank + 1], lacking[rank] + (need[rank + 5] if rank + 5 <= 16 else 0))
    return need


def upper_bounds(p: Problem) -> list[list[list[int]]]:
    """bound[r][s][J]: the most score can still be added after suit s of rank r has been
    decided (s = 4: after the sets of rank r; rank 0: before anything), with J jokers used so
    far, including the joker adjustment at the end. A state whose score plus this is below the
    floor cannot reach it. Optional cards that need a joker to be placed at all (``needy``)
    count only as far as the jokers left could carry them: such a card shares a meld with a
    joker and has no joker-free window of three ranks, so it lies within two ranks of one (a run
    ``a b JK d e``) or in a set with it: four cards per joker at most. A joker already placed
    (at this rank or the two before) may still carry such cards up to two ranks ahead, so those
    count in full.

    Mandatory cards that no meld holds without a joker also raise the jokers still to be placed
    (``_joker_need``): a state that cannot afford them gets no bound at all (``UNREACHABLE``).

    This bound ignores the state's lanes; ``lane_bound`` gives the sharper one that reads them.
    Before anything (``bound[0][4]``) the state is known (the initial lanes), so that row is
    already the sharper of the two."""
    return _bound_tables(p)[0]


def joker_rows(p: Problem) -> list[list[list[int]]]:
    """The part of ``upper_bounds`` that the jokers still to be placed add (and the joker
    adjustment), in the same shape."""
    return _bound_tables(p)[1]


def lane_bound(p: Problem) -> LaneBound:
    """The bound that reads a state's lanes (``lanes.LaneBound``), shared by every search
    of the same problem."""
    return _bound_tables(p)[2]


def _bound_tables(p: Problem) -> tuple[list[list[list[int]]], list[list[list[int]]], LaneBound]:
    jmax = p.jokers_max
    needy = p.needy or [[0] * 4 for _ in range(14)]
    memo = (
        p.cfg,
        tuple(map(tuple, p.table)),
        tuple(map(tuple, p.hand)),
        tuple(map(tuple, needy)),
        tuple(p.nat_weight),
        tuple(p.joker_weight),
        tuple(p.joker_adjust),
        jmax,
        p.jokers_min,
        p.threshold,  # the initial states (runs crossing K-A) depend on it
    )
    found = _BOUNDS.get(memo)
    if found is not None:
        return found
    if len(_BOUNDS) > 256:  # the searches of one position ask for the same bounds many times
        forget_bounds()
    top_nat = max(p.nat_weight[1:])
    need = _joker_need(p)
    bounds: list[list[list[int]]] = []
    jokers: list[list[list[int]]] = []
    # per cell in deciding order (rank by rank, suit by suit): the hand's score and needy cards
    # from that cell on, and the needy cards by rank
    cells = [(r, s) for r in range(1, 14) for s in range(4)]
    free_from = [0] * (len(cells) + 1)
    poor_from = [0] * (len(cells) + 1)
    for i in range(len(cells) - 1, -1, -1):
        r, s = cells[i]
        free_from[i] = free_from[i + 1] + p.nat_weight[r] * (p.hand[r][s] - needy[r][s])
        poor_from[i] = poor_from[i + 1] + needy[r][s]
    # the best joker weight from each rank on, and what the jokers still to be placed add by
    # jokers used so far, per first rank still open and jokers the mandatory cards from there
    # still need (a few distinct pairs per problem)
    weight_from = [*p.joker_weight, 0]
    for r in range(12, 0, -1):
        weight_from[r] = max(weight_from[r], weight_from[r + 1])
    adjust = p.joker_adjust
    parts: dict[tuple[int, int], list[int]] = {}
    for rank in range(14):
        rows = []
        joker_part = []
        later = need[min(rank + 3, 16)] if rank else need[1]
        for suit in range(5):
            # the cells still to decide: rank's suits after ``suit``, then every later rank
            if rank == 0:
                first_cell = 0
            elif suit == 4:
                first_cell = 4 * rank
            else:
                first_cell = 4 * (rank - 1) + suit + 1
            free = free_from[first_cell]
            poor = poor_from[first_cell]
            near = poor - poor_from[min(4 * (rank + 2), len(cells))]
            first = rank + 1 if suit == 4 or rank == 0 else rank
            part = parts.get((first, later))
            if part is None:
                wj = weight_from[first] if first <= 13 else 0
                part = parts[(first, later)] = [
                    adjust[used]
                    if first > 13
                    else UNREACHABLE
                    if used + later > jmax
                    else max(
                        wj * (f - used) + adjust[f]
                        for f in range(max(used + later, p.jokers_min), jmax + 1)
                    )
                    for used in range(jmax + 1)
                ]
            rows.append(
                [
                    free + min(poor, near + 4 * (jmax - used)) * top_nat + part[used]
                    for used in range(jmax + 1)
                ]
            )
            joker_part.append(part)
        bounds.append(rows)
        jokers.append(joker_part)
    lanes = LaneBound(p, jokers)
    before = lanes.at(0, 4)
    starts = initial_states(p, *machinery(p.cfg), key_layout(p.cfg).width)
    bounds[0][4] = [
        min(b, max(before(key, used) for key in starts)) for used, b in enumerate(bounds[0][4])
    ]
    found = _BOUNDS[memo] = (bounds, jokers, lanes)
    return found
