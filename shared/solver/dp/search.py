"""A depth-first search for any arrangement that reaches a floor, over the states of ``program``.

The breadth-first DP keeps every state that may still reach its floor, rank after rank; when
the floor is the upper bound itself (every placeable card placed, the usual case on a full
table), one arrangement that reaches it is already optimal, and a depth-first walk that tries
the most promising move first (the child with the highest bound, the lane bound included)
usually finds one after a few hundred states. A state that failed is remembered with its score:
a lower score from the same state fails too, and so does a state that a failed one dominates
(the DP's dominance, through the same index), so a floor that cannot be reached costs about what
the DP costs. The witness is rebuilt into melds by the DP's own ``rebuild_melds``.

The states refuted at a floor are the caller's to keep (``Refuted``): a search given them again,
with more patience, resumes where the last one gave up.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter

from shared.solver.dp.bounds import lane_bound, upper_bounds
from shared.solver.dp.program import (
    Problem,
    Result,
    ScoredIndex,
    beaten,
    initial_states,
    key_layout,
    machinery,
    new_scored,
    rebuild_melds,
    record,
    set_joker_counts,
    turn_back,
    turned_problem,
)

STAGES = 13 * 5  # per rank: four suits, then the sets


class GaveUp(Exception):
    """The witness search refuted ``patience`` states without finding a play: the floor is
    likely out of reach, which the breadth-first DP (with its dominance pruning) shows faster."""


@dataclass
class Refuted:
    """The states the witness searches of one problem refuted at one floor: a search of that
    problem asked again at that floor with more patience resumes instead of refuting them again
    (``shared.solver.goals`` alternates two searches with a growing patience)."""

    floor: int
    # state and stage -> the highest score with which it was refuted
    failed: dict[int, int] = field(default_factory=dict)
    # the same per stage and group (jokers, points, set counts), indexed for dominance
    failures: list[dict[int, ScoredIndex]] = field(
        default_factory=lambda: [{} for _ in range(STAGES + 1)]
    )
    # (rank, suit, lane pair) -> that suit's moves, best first
    options: dict[tuple[int, int, int], list[tuple[int, int, int, int, int]]] = field(
        default_factory=dict
    )


def _suit_moves(
    p: Problem, rank: int, suit: int, pair: int
) -> list[tuple[int, int, int, int, int]]:
    """(key delta, score delta, points delta, move index, jokers) of one suit's moves, best score
    first (ties: fewer jokers, then the lower lane pair)."""
    pairs = machinery(p.cfg)[1]
    lay = key_layout(p.cfg)
    need_card = p.need_card and not p.threshold
    shift = lay.width * suit
    wn = p.nat_weight[rank]
    wj = p.joker_weight[rank]
    pv = p.point_value[rank]
    ranked = []
    for new, jok, m, used, index in pairs.suit_options(
        pair, p.table[rank][suit], p.hand[rank][suit]
    ):
        dkey = lay.option_key(shift, pair, new, jok, m)
        dpts = used if need_card else pv * (used + jok)
        ranked.append((-(wn * used + wj * jok), jok, pairs.height(new), index, dkey, dpts))
    ranked.sort()
    return [(dkey, -neg, dpts, index, jok) for neg, jok, _, index, dkey, dpts in ranked]


def find_witness(
    p: Problem, floor: int, patience: int, refuted: Refuted | None = None
) -> Result | None:
    """An arrangement whose score (with ``joker_adjust``) is at least ``floor``, or None when
    there is none (``GaveUp`` when that takes too long to show: ``patience`` refuted states in
    all, those of earlier searches of ``p`` at this floor included when their ``refuted`` is
    given; it is filled in either way). Not necessarily the best above the floor: callers
    compare its score with the upper bound, or go on from it with the ``ladder``. Under ``ace:
    wrap`` the cycle of ranks is turned first, as the DP turns it (``turned_problem``)."""
    if refuted is None:
        refuted = Refuted(floor)
    elif refuted.floor != floor:
        raise ValueError(f"states refuted at floor {refuted.floor}, searched at {floor}")
    turned, order = turned_problem(p)
    return turn_back(_search(turned, floor, patience, refuted), order)


def _search(p: Problem, floor: int, patience: int, kept: Refuted) -> Result | None:
    """``find_witness`` on the problem as the DP reads it."""
    lanes, pairs = machinery(p.cfg)
    cfg = p.cfg
    lay = key_layout(cfg)
    width, js, ps, c1s, c2s, mask = lay.width, lay.js, lay.ps, lay.c1s, lay.c2s, lay.mask
    clear_c = (1 << c1s) - 1
    threshold = p.threshold
    jmax = p.jokers_max
    jmin = p.jokers_min
    need_card = p.need_card and not threshold
    adjust = p.joker_adjust
    bounds = upper_bounds(p)
    sharper = lane_bound(p)
    lane_at = sharper.at
    end_ok = pairs.end_ok
    options, failed, failures = kept.options, kept.failed, kept.failures
    upmask = pairs.tables()[1]
    w2, w3 = 2 * width, 3 * width
    path: list[tuple[int, int]] = []  # (state after the stage, back pointer), deepest first
    result: list[int] = []

    def go(stage: int, key: int, score: int, again: Callable[..., bool]) -> bool:
        """Whether some completion of this state reaches the floor (``again`` is ``go``
        itself: a closure naming itself would be a reference cycle holding every failed state
        until the cyclic collector walked them all)."""
        if stage == STAGES:
            jokers = (key >> js) & 15
            if jokers < jmin or (threshold and (key >> ps) & 255 < threshold):
                return False
            if need_card and not (key >> ps) & 1 and jokers <= jmin:
                return False
            if not all(end_ok(key >> (width * s) & mask) for s in range(4)):
                return False
            total = score + adjust[jokers]
            if total < floor:
                return False
            result.append(total)
            return True
        memo = key * STAGES + stage
        known = failed.get(memo)
        if known is not None and known >= score:
            return False
        # a state failed that dominates this one (lanes as good in every suit, same jokers,
        # points and set counts, as high a score): this one fails too
        group = key >> js
        parts = (key & mask, (key >> width) & mask, (key >> w2) & mask, key >> w3 & mask)
        dead = failures[stage].get(group)
        if dead is not None and beaten(parts, upmask, dead, score):
            return False
        rank, suit = divmod(stage, 5)
        rank += 1
        row = bounds[rank][suit]
        lane = lane_at(rank, suit)
        children: list[tuple[int, int, int, int]] = []  # (-potential, key, score, back)
        if suit < 4:
            shift = width * suit
            pair = (key >> shift) & mask
            moves = options.get((rank, suit, pair))
            if moves is None:
                moves = options[(rank, suit, pair)] = _suit_moves(p, rank, suit, pair)
            for dkey, dscore, dpts, index, _ in moves:
                nk = key + dkey
                jokers = (nk >> js) & 15
                if jokers > jmax:
                    continue
                s2 = score + dscore
                if s2 + row[jokers] < floor:
                    continue
                potential = s2 + lane(nk, jokers)
                if potential < floor:
                    continue
                if threshold and dpts:
                    pts = (key >> ps) & 255
                    nk += (min(threshold, pts + dpts) - pts) << ps
                elif need_card and dpts and not (key >> ps) & 1:
                    nk += 1 << ps
                children.append((-potential, nk, s2, key << 12 | index))
        else:
            wj = p.joker_weight[rank]
            pv = p.point_value[rank]
            base = key & clear_c
            for j in set_joker_counts((key >> c1s) & 7, (key >> c2s) & 7, cfg.set_max):
                nk = base + (j << js)
                jokers = (nk >> js) & 15
                if jokers > jmax:
                    break
                s2 = score + wj * j
                if s2 + row[jokers] < floor:
                    continue
                potential = s2 + lane(nk, jokers)
                if potential < floor:
                    continue
                if threshold and j:
                    pts = (key >> ps) & 255
                    nk += (min(threshold, pts + pv * j) - pts) << ps
                children.append((-potential, nk, s2, key << 5 | j))
        # the most promising first: the highest bound (ties: the order of the moves)
        children.sort(key=itemgetter(0))
        for _, nk, s2, back in children:
            if again(stage + 1, nk, s2, again):
                path.append((nk, back))
                return True
        failed[memo] = score if known is None else max(known, score)
        if dead is None:
            dead = failures[stage][group] = new_scored()
        record(parts, dead, score)
        if len(failed) > patience:
            raise GaveUp
        return False

    initial = initial_states(p, lanes, pairs, width)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, STAGES * 4 + 200))
    try:
        for start in initial:
            if go(0, start, 0, go):
                break
        else:
            return None
    finally:
        sys.setrecursionlimit(limit)
    path.reverse()
    history = [[{nk: back} for nk, back in path[r * 5 : r * 5 + 5]] for r in range(13)]
    end = path[-1][0]
    melds = rebuild_melds(p, history, end, initial, lanes, pairs, lay)
    return Result(result[0], (end >> js) & 15, (end >> ps) & 255, melds)
