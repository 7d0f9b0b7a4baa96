"""The DP of ``program`` run under a floor that comes down step by step, without starting over.

A DP run under a floor keeps only the states whose score plus the upper bound of what is left
reaches the floor; a floor nothing reaches costs a whole run, and the next (lower) floor would
start from rank A again. Here every state that a floor drops is kept aside, with its
*potential* (score plus bound), in a heap per stage. Lowering the floor brings back exactly the
states whose potential reaches the new floor and expands only them (and whatever they improve);
the states already expanded stay as they are. The first floor reached gives the optimum, and the
work done is about that of one run at the optimum's own floor. A candidate is first held to the
plain bound (``bounds.upper_bounds``), and only if it passes that to the sharper lane bound
(``lanes``); one put aside on the plain bound meets the lane bound when a lower floor
brings it back (most never come back).

Correctness: every arrangement scoring at least the floor passes through states whose potential
reaches the floor (the bound is admissible), so each of its states is either expanded or
dominated by an expanded one with at least its score. A state's score only grows when a better
path reaches it, and then it is expanded again; back pointers always name the last best path.
Dominance (``Lanes.above``) is checked against the expanded states with their scores, so it holds
whatever order the states came in.
"""

from __future__ import annotations

import heapq
from heapq import heappop, heappush

from shared.solver.dp.bounds import lane_bound, upper_bounds
from shared.solver.dp.program import (
    Problem,
    Result,
    ScoredIndex,
    beaten,
    best_end,
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


class Ladder:
    """The states of one problem under a floor that only comes down (``reach``)."""

    def __init__(self, p: Problem) -> None:
        self.problem, self.order = turned_problem(p)
        p = self.problem
        self.lanes, self.pairs = machinery(p.cfg)
        self.lay = key_layout(p.cfg)
        self.bounds = upper_bounds(p)
        sharper = lane_bound(p)
        # per stage: the bound that reads the lanes (stage 0: before anything)
        self.lane = [sharper.at(0, 4)] + [
            sharper.at(rank, suit) for rank in range(1, 14) for suit in range(5)
        ]
        width = self.lay.width
        self.initial = initial_states(p, self.lanes, self.pairs, width)
        # per stage 0..STAGES: expanded states (key -> score) and their back pointers
        self.front: list[dict[int, int]] = [{} for _ in range(STAGES + 1)]
        self.backs: list[dict[int, int]] = [{} for _ in range(STAGES + 1)]
        # per stage: states below the floor, a heap of (-potential, key, score, back pointer,
        # whether the potential is the sharper bound's): a lower floor takes the best potentials
        # first and leaves the rest untouched
        self.waiting: list[list[tuple[int, int, int, int, bool]]] = [[] for _ in range(STAGES + 1)]
        top = self._row(0)[0]
        for key in self.initial:
            self.waiting[0].append((-top, key, 0, 0, True))
        heapq.heapify(self.waiting[0])
        self.options: dict[tuple[int, int, int], list[tuple[int, int, int, int, int]]] = {}
        # per stage and group (jokers, points, set counts), an index of the expanded states: for
        # each suit, lane pair -> bit mask of the states with that pair there; and their scores
        self.winners: list[dict[int, ScoredIndex]] = [{} for _ in range(STAGES + 1)]
        self.floor: int | None = None

    def highest_waiting(self) -> int | None:
        """The best potential of any state kept aside (None: the search space is exhausted)."""
        tops = [-waiting[0][0] for waiting in self.waiting if waiting]
        return max(tops) if tops else None

    def _row(self, stage: int) -> list[int]:
        """The bound after ``stage`` stages (the score still to come, by jokers used)."""
        if stage == 0:
            return self.bounds[0][4]
        rank, suit = divmod(stage - 1, 5)
        return self.bounds[rank + 1][suit]

    def _suit_options(
        self, rank: int, suit: int, pair: int
    ) -> list[tuple[int, int, int, int, int]]:
        """(key delta, score delta, points delta, back index, jokers) of one suit's moves."""
        found = self.options.get((rank, suit, pair))
        if found is None:
            p = self.problem
            lay = self.lay
            shift = lay.width * suit
            need_card = p.need_card and not p.threshold
            wn = p.nat_weight[rank]
            wj = p.joker_weight[rank]
            pv = p.point_value[rank]
            found = []
            for new, jok, m, used, index in self.pairs.suit_options(
                pair, p.table[rank][suit], p.hand[rank][suit]
            ):
                dkey = lay.option_key(shift, pair, new, jok, m)
                dpts = used if need_card else pv * (used + jok)
                found.append((dkey, wn * used + wj * jok, dpts, index, jok))
            self.options[(rank, suit, pair)] = found
        return found

    def _admit(self, stage: int, incoming: dict[int, tuple[int, int]]) -> list[int]:
        """Add the candidate states of a stage (key -> (score, back)) that are new or better and
        not dominated; return the keys to expand."""
        front = self.front[stage]
        backs = self.backs[stage]
        lay = self.lay
        width, mask, js = lay.width, lay.mask, lay.js
        w2, w3 = 2 * width, 3 * width
        height, upmask = self.pairs.tables()  # upmask: a pair and those dominating it
        low_mask = (1 << js) - 1
        ranked = []
        for key, (score, back) in incoming.items():
            old = front.get(key)
            if old is not None and old >= score:
                continue
            rank = (
                height[key & mask]
                + height[(key >> width) & mask]
                + height[(key >> w2) & mask]
                + height[key >> w3 & mask]
            )
            ranked.append((-score, rank, key, back))
        ranked.sort()
        fresh = []
        index_of = self.winners[stage]
        for neg, rank, key, back in ranked:
            score = -neg
            group = key - (key & low_mask)
            found = index_of.get(group)
            if found is None:
                found = index_of[group] = new_scored()
            parts = (key & mask, (key >> width) & mask, (key >> w2) & mask, key >> w3 & mask)
            if rank and beaten(parts, upmask, found, score):
                continue
            front[key] = score
            backs[key] = back
            fresh.append(key)
            record(parts, found, score)
        return fresh

    def reach(self, floor: int) -> Result | None:
        """The best arrangement scoring ``floor`` or more (with ``joker_adjust``), or None. Each
        call's floor must not be above the last one's."""
        assert self.floor is None or floor <= self.floor
        self.floor = floor
        p = self.problem
        lay = self.lay
        width, js, ps, c1s, c2s, mask = lay.width, lay.js, lay.ps, lay.c1s, lay.c2s, lay.mask
        clear_c = (1 << c1s) - 1
        threshold = p.threshold
        jmax = p.jokers_max
        need_card = p.need_card and not threshold
        cfg = p.cfg
        carried: dict[int, tuple[int, int]] = {}
        for stage in range(STAGES + 1):
            waiting = self.waiting[stage]
            while waiting and -waiting[0][0] >= floor:
                _, key, score, back, sharp = heappop(waiting)
                if not sharp:  # put aside on the plain bound: ask the sharper one now
                    sharper = score + self.lane[stage](key, (key >> js) & 15)
                    if sharper < floor:
                        heappush(waiting, (-sharper, key, score, back, True))
                        continue
                old = carried.get(key)
                if old is None or old[0] < score:
                    carried[key] = (score, back)
            fresh = self._admit(stage, carried) if carried else []
            carried = {}
            if stage == STAGES or not fresh:
                continue
            front = self.front[stage]
            heap = self.waiting[stage + 1]
            options: dict[int, list[tuple[int, int, int, int, int]]] = {}
            row = self._row(stage + 1)
            lane = self.lane[stage + 1]
            rank, suit = divmod(stage, 5)
            rank += 1
            get = carried.get
            if suit < 4:
                shift = width * suit
                for key in fresh:
                    score = front[key]
                    pair = (key >> shift) & mask
                    moves = options.get(pair)
                    if moves is None:
                        moves = options[pair] = self._suit_options(rank, suit, pair)
                    for dkey, dscore, dpts, index, _ in moves:
                        nk = key + dkey
                        jokers = (nk >> js) & 15
                        if jokers > jmax:
                            continue
                        if threshold and dpts:
                            pts = (key >> ps) & 255
                            nk += (min(threshold, pts + dpts) - pts) << ps
                        elif need_card and dpts and not (key >> ps) & 1:
                            nk += 1 << ps
                        s2 = score + dscore
                        potential = s2 + row[jokers]
                        if potential < floor:  # the sharper bound later, if ever popped
                            heappush(heap, (-potential, nk, s2, key << 12 | index, False))
                            continue
                        potential = s2 + lane(nk, jokers)
                        if potential < floor:
                            heappush(heap, (-potential, nk, s2, key << 12 | index, True))
                            continue
                        old = get(nk)
                        if old is None or old[0] < s2:
                            carried[nk] = (s2, key << 12 | index)
            else:
                wj = p.joker_weight[rank]
                pv = p.point_value[rank]
                for key in fresh:
                    score = front[key]
                    base = key & clear_c
                    for j in set_joker_counts((key >> c1s) & 7, (key >> c2s) & 7, cfg.set_max):
                        nk = base + (j << js)
                        jokers = (nk >> js) & 15
                        if jokers > jmax:
                            break
                        if threshold and j:
                            pts = (key >> ps) & 255
                            nk += (min(threshold, pts + pv * j) - pts) << ps
                        s2 = score + wj * j
                        potential = s2 + row[jokers]
                        if potential < floor:  # the sharper bound later, if ever popped
                            heappush(heap, (-potential, nk, s2, key << 5 | j, False))
                            continue
                        potential = s2 + lane(nk, jokers)
                        if potential < floor:
                            heappush(heap, (-potential, nk, s2, key << 5 | j, True))
                            continue
                        old = get(nk)
                        if old is None or old[0] < s2:
                            carried[nk] = (s2, key << 5 | j)
        return self._best(floor)

    def _best(self, floor: int) -> Result | None:
        """The best end state at or above the floor, rebuilt into melds."""
        p = self.problem
        lay = self.lay
        js, ps = lay.js, lay.ps
        best = best_end(p, self.front[STAGES], self.pairs, lay, floor)
        if best is None:
            return None
        total, key = best
        history = [self.backs[r * 5 + 1 : r * 5 + 6] for r in range(13)]
        melds = rebuild_melds(p, history, key, self.initial, self.lanes, self.pairs, lay)
        return turn_back(Result(total, (key >> js) & 15, (key >> ps) & 255, melds), self.order)
