"""A depth-first search for any arrangement that reaches a floor, over the states of ``solver_dp``.

The breadth-first DP keeps every state that may still reach its floor, rank after rank; when
the floor is the upper bound itself (every placeable card placed, the usual case on a full
table), one arrangement that reaches it is already optimal, and a depth-first walk that tries
the most promising move first (the child with the highest bound, the lane bound included)
usually finds one after a few hundred states. A state that failed is remembered with its score:
a lower score from the same state fails too, and so does a state that a failed one dominates
(the DP's dominance, through the same index), so a floor that cannot be reached costs about what
the DP costs. The witness is rebuilt into melds by the DP's own ``_rebuild``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter

from shared.core.solver_dp import (
    Problem,
    Result,
    ScoredIndex,
    _layout,
    _rebuild,
    beaten,
    initial_states,
    lane_bound,
    machinery,
    new_scored,
    record,
    set_joker_counts,
    upper_bounds,
)

STAGES = 13 * 5  # per rank: four suits, then the sets


class GaveUp(Exception):
    """The witness search refuted ``Problem.patience`` states without finding a play: the floor is
    likely out of reach, which the breadth-first DP (with its dominance pruning) shows faster."""


@dataclass
class Refuted:
    """The states a witness search refuted at one floor, kept with the problem (``p.refuted``):
    a search asked again at that floor with more patience resumes instead of refuting them again
    (``solver._race`` alternates two searches with a growing patience)."""

    owner: int  # the ``id`` of the problem searched (copies of it carry the field along)
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
    lay = _layout(p.cfg)
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


def find_witness(p: Problem, floor: int) -> Result | None:
    """An arrangement whose score (with ``joker_adjust``) is at least ``floor``, or None when
    there is none (``GaveUp`` when that takes too long to show: ``p.patience`` refuted states in
    all, those of earlier searches of ``p`` at this floor included). Not necessarily the best
    above the floor: callers compare its score with the upper bound, or hand it to the DP as a
    tighter floor."""
    lanes, pairs = machinery(p.cfg)
    cfg = p.cfg
    lay = _layout(cfg)
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
    kept = p.refuted
    if kept is None or kept.floor != floor or kept.owner != id(p):  # a copy's: other states
        kept = p.refuted = Refuted(id(p), floor)
    options, failed, failures = kept.options, kept.failed, kept.failures
    upmask = pairs.tables()[1]
    w2, w3 = 2 * width, 3 * width
    path: list[tuple[int, int]] = []  # (state after the stage, back pointer), deepest first
    result: list[int] = []
    patience = p.patience

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
    melds = _rebuild(p, history, end, initial, lanes, pairs, lay)
    return Result(result[0], (end >> js) & 15, (end >> ps) & 255, melds)
