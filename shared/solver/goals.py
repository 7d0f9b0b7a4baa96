"""The goals of the exact solver: the best play for a table and a hand, and whether cards can be
arranged, each as one or a few problems of the DP.

Pure (no I/O). The search is the rank-by-rank dynamic program of ``dp.program`` (after van
Rijn, Takes and Vis, 2015) and the searches under a floor over its states (``dp.search``,
``dp.ladder``); this module turns each goal into one or a few DP problems, checks every answer
with ``judge_play`` and tidies the layout (long runs merged, table melds kept as they were where
the play allows).

Goals (``solve``):

- ``cards``: the legal play that places the most cards from the hand (a joker played from the
  hand counts as a card); then the fewest jokers in the layout (so jokers stay in the hand, or
  come back to it under ``to_hand``, unless they place more cards); then the most points.
- ``points``: the play whose placed cards are worth the most (each joker in the layout at the
  card it stands for); then the most cards, then the fewest jokers.
- ``opening``: the opening play (melds from the hand alone, table untouched) reaching the rule
  set's threshold that places the most natural cards; jokers only where needed (to place more
  naturals or to reach the threshold); then the most points.
- Before a seat has opened (with a threshold above 0), ``cards`` and ``points`` are openings too.

The model of a turn after opening: every table card stays on the table; under ``to_hand`` a
table joker may leave when a natural card it stands for (in a reading of its meld before the
turn) is played; under ``never`` and ``must_replay`` every table joker stays.

With ``min_disruption`` the solver then looks, among the plays as good as the best, for one that
leaves more table melds unchanged (greedily: it keeps the unchanged melds of the best layout and
adds back every other table meld it can while the play stays optimal).
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from shared.core.cards import JOKER
from shared.core.judgement import Verdict, judge_play, redeemable
from shared.core.melds import card_values, joker_candidates, readings
from shared.core.rulesets import RuleSet
from shared.solver.dp.bounds import forget_bounds, upper_bounds
from shared.solver.dp.ladder import Ladder
from shared.solver.dp.lanes import forget_tables
from shared.solver.dp.program import (
    Config,
    Problem,
    Result,
    mirror_back,
    mirrored_problem,
    solve_dp,
)
from shared.solver.dp.search import GaveUp, Refuted, find_witness
from shared.solver.plays import Arrangement, Goal, Layout, Meld, Play

CARD = 1_000_000  # lexicographic weights of the DP score
JOKER_COST = 1_000
POINT = 10_000
POINTS_CARD = 10
# Refuted states after which a play's witness search gives up (the Ladder goes on from there).
PATIENCE = 2_000
# ... and arrange's (its states cost more than a play's: every card is required; measured on
# 40-80 cards, 300-800 about alike).
ARRANGE_PATIENCE = 500
# Look for a play with the ranks read K to A too (``dp.program.mirrored_problem``) when the
# witness search reading them A to K finds none at the bound (``_race``), and go on the way
# whose witness search finished first. Measured on the slowest 40-card positions: the two ways
# (each alone exact) differ in cost by a factor of two to fifteen either way, and the way whose
# witness search needed less effort was the cheaper one in 17 of 22. ``tests/bench/direction.py``
# times the solver with and without.
MIRROR_PROBE = True
# ... but only after the first witness search refuted this many states: below it the position
# is easy, and the mirrored search's own bound tables cost more than it could save. Measured
# with tests/bench/direction.py (40 positions a row): without a threshold, 20-card arrange 70%
# and cards 18% dearer in all; 128 against 32, at 40-60 cards, 12-17% less in all (seed 1),
# 60 positions a row at 20-60 cards 3-10% less except `points` at 20 cards, 7% more (seed 3);
# 256 against 128 even (seed 2).
PROBE_EFFORT = 128


def _config(rules: RuleSet) -> Config:
    return Config(rules.ace == "wrap", min(rules.run_max, 13), rules.set_max)


def _grid(cards: Sequence[int]) -> list[list[int]]:
    grid = [[0, 0, 0, 0] for _ in range(14)]
    for card in cards:
        if card != JOKER:
            grid[card % 13 + 1][card // 13] += 1
    return grid


def _rank_values(rules: RuleSet) -> list[int]:
    values = card_values(rules.point_values)
    return [0, *(values[r] for r in range(13))]


@dataclass
class _Weights:
    nat: list[int]
    joker: list[int]
    adjust: list[int]
    threshold: int
    point: list[int]


def _weights(
    rules: RuleSet, goal: str, table_jokers: int, jokers_max: int, opening: bool
) -> _Weights:
    val = _rank_values(rules)
    if goal == "points":
        nat = [POINT * v + POINTS_CARD for v in val]
        joker = [POINT * v + POINTS_CARD - 1 for v in val]
        adjust = [-POINTS_CARD * min(j, table_jokers) for j in range(jokers_max + 1)]
    elif goal == "opening":
        nat = [CARD + v for v in val]
        joker = [-JOKER_COST + v for v in val]
        adjust = [0] * (jokers_max + 1)
    else:
        nat = [CARD + v for v in val]
        joker = [CARD - JOKER_COST] * 14
        adjust = [-CARD * min(j, table_jokers) for j in range(jokers_max + 1)]
    threshold = rules.opening_points if opening else 0
    return _Weights(nat, joker, adjust, threshold, val)


def _problem(
    rules: RuleSet,
    mandatory: Sequence[int],
    optional: Sequence[int],
    jokers_max: int,
    jokers_min: int,
    w: _Weights,
    need_card: bool = False,
) -> Problem:
    return Problem(
        _config(rules),
        _grid(mandatory),
        _grid(optional),
        jokers_max,
        jokers_min,
        w.nat,
        w.joker,
        w.point,
        w.adjust,
        w.threshold,
        need_card,
    )


def _fewest_jokers(p: Problem, rank: int, suit: int) -> int:
    """The fewest jokers any meld holding this card needs, given every card of the problem."""

    def have(r: int, s: int) -> bool:
        return p.table[r][s] + p.hand[r][s] > 0

    fewest = 3 - sum(1 for s in range(4) if have(rank, s))  # a set
    for first in range(rank - 2, rank + 1):  # a run of three
        if not p.cfg.wrap and (first < 1 or first + 2 > 13):
            continue
        ranks = [(r - 1) % 13 + 1 for r in (first, first + 1, first + 2)]
        fewest = min(fewest, sum(1 for r in ranks if not have(r, suit)))
    return fewest


def _stranded(p: Problem) -> bool:
    """Some card that must be placed fits no meld even with every joker: no arrangement."""
    return any(
        p.table[rank][suit] and _fewest_jokers(p, rank, suit) > p.jokers_max
        for rank in range(1, 14)
        for suit in range(4)
    )


def _placeable(p: Problem) -> Problem:
    """Drop the optional cards that no meld could hold (too few cards of their rank for a set
    and too few of their suit nearby for a run, even with every joker), and mark those that no
    meld holds without a joker: the optimum is the same, the search smaller, the bound tighter."""
    jokers = p.jokers_max
    hand = [list(row) for row in p.hand]
    needy = [[0] * 4 for _ in range(14)]
    for rank in range(1, 14):
        for suit in range(4):
            if not hand[rank][suit]:
                continue
            fewest = _fewest_jokers(p, rank, suit)
            if fewest > jokers:
                hand[rank][suit] = 0
            elif fewest > 0:
                needy[rank][suit] = hand[rank][suit]
    # Under ace wrap a joker near one end of the cycle may carry cards at the other (a run
    # crossing K-A), which the bound's reach of two ranks does not see: no needy cards there.
    return dataclasses.replace(p, hand=hand, needy=None if p.cfg.wrap else needy)


def _bounded(p: Problem, unit: int, known: Result | None = None) -> Result | None:
    """Solve with a floor: first demand the upper bound (in whole units of the goal's first
    criterion), then less (``_stepped``). A floor nothing reaches costs little, because every
    state that has already lost too much is dropped; the first floor reached gives the optimum
    (every better one was refuted).

    Under ``ace: wrap`` the same problem with the ace low is solved first: its arrangements are
    legal under wrap too, so only a play beating it is searched for (no state budget: the
    answer is always exact). ``known``: a score already reached elsewhere; only a better play is
    searched for, and ``known`` itself is returned when there is none."""
    p = _placeable(p)
    if not p.cfg.wrap:
        return _stepped(p, unit, known)
    low = _bounded(dataclasses.replace(p, cfg=dataclasses.replace(p.cfg, wrap=False)), unit, known)
    return _stepped(p, unit, low)


def _stepped(p: Problem, unit: int, known: Result | None = None) -> Result | None:
    """The optimum, demanding the upper bound first and then less, one unit at a time (or down
    to the best potential of any state still waiting). A depth-first search first looks for a
    play at the bound's floor (``_witness``; on a full table it usually finds one, and a play
    scoring the bound is optimal at once). When it finds none there after some effort, the same
    search with the ranks read K to A takes turns with it (``_race``); the way that finished
    first goes on (``_descend``): the ``Ladder`` lowers its floor without starting over, so
    the first floor reached gives the optimum at about the cost of one DP run at the optimum's
    own floor. ``known``: a play already found (the ace-low one under wrap); only a
    better one is searched for, and it is the answer when there is none."""
    top = upper_bounds(p)[0][4][0]
    if known is not None and known.score >= top:
        return known
    floor = (top + unit // 2) // unit * unit - unit // 2
    lowest = known.score + 1 if known is not None else None
    if lowest is not None and floor < lowest:
        floor = lowest
    way, found, refuted, mirrored = _race(p, floor, PATIENCE)
    if found is not None and found.score >= top:
        return mirror_back(found) if mirrored else found
    best = _descend(way, unit, floor, lowest, known, found, refuted)
    if mirrored and best is not None and best is not known:
        best = mirror_back(best)
    return best


def _race(p: Problem, floor: int, patience: int) -> tuple[Problem, Result | None, bool, bool]:
    """The witness search for a play at ``floor``: reading the ranks A to K, and once that has
    refuted ``PROBE_EFFORT`` states without an answer, K to A too (``mirrored_problem``). The
    two take turns with a patience that doubles up to ``patience``, each resuming where it
    stopped (its refuted states are kept), so the cheaper way finishes at about twice its own
    cost whichever it is. Returns the problem of the way that finished (A to K when both gave
    up), its play, whether it refuted the floor, and whether it is the mirrored one."""
    if not MIRROR_PROBE or p.cfg.wrap or patience <= PROBE_EFFORT:
        found, refuted = _witness(p, floor, patience)
        return p, found, refuted, False
    budget = PROBE_EFFORT
    ahead = (p, Refuted(floor))  # each way with the states its searches refuted
    back: tuple[Problem, Refuted] | None = None
    way = ahead
    while True:
        found, refuted = _witness(way[0], floor, budget, way[1])
        if found is not None or refuted:
            break
        if way is ahead:  # the K-to-A way next, with the same patience
            if back is None:
                back = (mirrored_problem(p), Refuted(floor))
            way = back
        elif budget >= patience:  # both gave up: go on A to K
            way = ahead
            break
        else:
            budget = min(2 * budget, patience)
            way = ahead
    return way[0], found, refuted, way is not ahead


def _witness(
    p: Problem, floor: int, patience: int, refuted: Refuted | None = None
) -> tuple[Result | None, bool]:
    """The depth-first search for a play at ``floor`` or more (``dp.search``), giving up after
    ``patience`` refuted states (``refuted``: those of earlier searches of ``p`` at this floor,
    to resume them): the play found, or None and whether the floor was refuted (False: it gave
    up)."""
    try:
        found = find_witness(p, floor, patience, refuted)
        return found, found is None
    except GaveUp:
        return None, False


def _descend(
    p: Problem,
    unit: int,
    floor: int,
    lowest: int | None,
    known: Result | None,
    found: Result | None,
    refuted: bool,
) -> Result | None:
    """``_stepped`` after the witness search (``found``, ``refuted``): the ``Ladder`` from the
    witness's score (it surely reaches it, and the best play there is the optimum) or from the
    floor below the one refuted. (A plain DP run first, which this once did above a witness and
    on tables of 50 cards or more, measured even on ordinary positions, compiled or not, and
    twice as slow on the slowest of the full exactness run: 181 against 91 s.)"""
    if found is not None:
        floor = found.score
    elif refuted:
        if floor == lowest:
            return known
        floor -= unit
    ladder = Ladder(p)
    while True:
        if lowest is not None and floor <= lowest:
            return ladder.reach(lowest) or known
        best = ladder.reach(floor)
        if best is not None:
            return best
        waiting = ladder.highest_waiting()
        if waiting is None:  # every state expanded: the best end state below the floor
            return ladder.reach(-(1 << 62) if lowest is None else lowest) or known
        floor = min(floor - unit, (waiting + unit // 2) // unit * unit - unit // 2)


def _minus(cards: Sequence[int], take: Sequence[int]) -> list[int]:
    left = Counter(cards)
    left.subtract(take)
    return sorted(left.elements())


def _contains(cards: Sequence[int], sub: Sequence[int]) -> bool:
    have = Counter(cards)
    return all(have[c] >= n for c, n in Counter(sub).items())


def _run_span(meld: Sequence[int]) -> tuple[int, int, int] | None:
    """(suit, first rank, length) of a meld built as a run in rank order, else None."""
    naturals = [(i, c) for i, c in enumerate(meld) if c != JOKER]
    if len({c // 13 for _, c in naturals}) != 1 or len(meld) < 3:
        return None
    index, card = naturals[0]
    ranks = [c % 13 for _, c in naturals]
    if len(set(ranks)) != len(ranks):
        return None
    start = (card % 13 - index) % 13 + 1
    return card // 13, start, len(meld)


def _value(meld: Meld, rules: RuleSet) -> int:
    found = readings(meld, rules)
    return found[0].value if found else -1


def _merge_runs(melds: list[list[int]], rules: RuleSet) -> list[list[int]]:
    """Join runs of one suit that meet end to start, while the joined run is legal and worth
    what its parts were (a meld the DP laid as a set, such as ``KD JK JK JK``, may also read as
    a run; joined to a run its jokers would stand for lower cards and lose points)."""
    changed = True
    while changed:
        changed = False
        spans = [_run_span(m) for m in melds]
        ends: dict[tuple[int, int], int] = {}
        for i, span in enumerate(spans):
            if span is not None and len(melds[i]) >= 3:
                suit, start, length = span
                ends.setdefault((suit, (start + length - 1) % 13 + 1), i)
        for j, span in enumerate(spans):
            if span is None:
                continue
            first = ends.get((span[0], span[1]))
            if first is None or first == j:
                continue
            if rules.ace == "low" and span[1] == 1:
                continue
            i = first
            joined = melds[i] + melds[j]
            if len(joined) <= rules.run_max and _value(joined, rules) == _value(
                melds[i], rules
            ) + _value(melds[j], rules):
                melds = [m for k, m in enumerate(melds) if k not in (i, j)] + [joined]
                changed = True
                break
    return melds


def _unchanged(table: Sequence[Meld], layout: Sequence[Meld]) -> list[tuple[int, ...]]:
    """The table melds (as sorted tuples) that stand unchanged in the layout."""
    left = Counter(tuple(sorted(m)) for m in layout)
    kept = []
    for meld in table:
        key = tuple(sorted(meld))
        if left[key] > 0:
            left[key] -= 1
            kept.append(key)
    return kept


def _canonical(rules: RuleSet, melds: Sequence[Meld]) -> Layout:
    out = []
    for meld in melds:
        found = readings(meld, rules)
        out.append(found[0].cards if found else tuple(sorted(meld)))
    return tuple(out)


class _Search:
    """One position: the DP problems of a goal and the checks of their answers."""

    def __init__(
        self, rules: RuleSet, table: Sequence[Meld], hand: Sequence[int], opened: bool, goal: str
    ) -> None:
        self.rules = rules
        self.table = [tuple(m) for m in table]
        self.hand = list(hand)
        self.opened = opened
        self.goal = goal
        self.opening = (not opened and rules.opening_points > 0) or goal == "opening"
        self.table_cards = [c for m in self.table for c in m]
        self.table_jokers = self.table_cards.count(JOKER)
        self.hand_jokers = self.hand.count(JOKER)
        self.unit = POINT if goal == "points" else CARD

    # --- the DP problems --------------------------------------------------------------------

    def _solve(
        self,
        mandatory: Sequence[int],
        optional: Sequence[int],
        forced: int = 0,
        jokers_min: int | None = None,
        kept: Sequence[Meld] = (),
        beat: Result | None = None,
    ) -> Result | None:
        """One DP problem. ``forced``: score of hand cards moved into ``mandatory`` (a
        redemption plan); ``kept``: table melds held out unchanged (their jokers still count);
        ``beat``: a play already found: only a better one is searched for (None when there is
        none), which costs far less than the optimum of a problem that cannot beat it."""
        rules = self.rules
        if self.opening:
            jmax = optional.count(JOKER)
            w = _weights(rules, self.goal, 0, jmax, True)
            return self._bounded(_problem(rules, [], optional, jmax, 0, w))
        tj = self.table_jokers
        kept_jokers = sum(m.count(JOKER) for m in kept)
        jmax = mandatory.count(JOKER) + optional.count(JOKER)
        w = _weights(rules, self.goal, tj, jmax + kept_jokers, False)
        w.adjust = w.adjust[kept_jokers:]
        for meld in kept:
            if JOKER in meld:
                read = readings(meld, rules)
                stands = read[0].joker_cards() if read else ()
                forced += sum(w.joker[c % 13 + 1] for c in stands)
        jmin = mandatory.count(JOKER) if jokers_min is None else jokers_min
        need_card = self.goal == "points" and not forced
        problem = _problem(rules, mandatory, optional, jmax, jmin, w, need_card)
        known = None if beat is None else Result(beat.score - forced, beat.jokers, 0, [])
        result = self._bounded(problem, known)
        if result is None or result is known:
            return None
        if forced:
            result.score += forced
        return result

    def _bounded(self, problem: Problem, known: Result | None = None) -> Result | None:
        return _bounded(problem, self.unit, known)

    def best(self) -> Result | None:
        """The optimal DP answer for the goal (all joker policies handled)."""
        if self.opening:
            return self._solve([], self.hand)
        base = self._solve(self.table_cards, self.hand)
        tj = self.table_jokers
        if self.rules.joker_policy != "to_hand" or tj == 0:
            return base
        candidates = Counter(
            c
            for meld in self.table
            if JOKER in meld
            for c in joker_candidates(meld, self.rules)
            if c in self.hand
        )
        if not candidates:
            return base
        relaxed = self._solve(self.table_cards, self.hand, jokers_min=0, beat=base)
        if relaxed is None:  # not even with jokers dropped freely: base is the best
            return base
        if self._legal(relaxed.melds):
            return relaxed
        best = base
        hand_count = Counter(self.hand)
        pool = sorted(c for c in candidates for _ in range(min(2, hand_count[c])))
        val = _weights(self.rules, self.goal, tj, 0, False).nat
        levels = []  # (k, the plans redeeming k jokers), k falling
        for k in range(tj, 0, -1):
            plans = [
                plan
                for plan in sorted(set(itertools.combinations(pool, k)))
                if redeemable(self.rules, self.table, list(plan), k)
            ]
            if plans:
                levels.append((k, plans))
        for index, (k, plans) in enumerate(levels):
            # A legal play redeeming k jokers or fewer keeps tj - k of them or more in the
            # layout, so the problem demanding that many (no card forced) bounds every plan
            # from here on; one DP that only looks above the best so far (cheap when nothing is
            # there) may spare many plans (7 table jokers: dozens, each a full DP). When its
            # own play is legal it beats them all. (k == tj: that problem is ``relaxed``.)
            if k < tj and (len(plans) > 1 or index + 1 < len(levels)):
                bound = self._solve(self.table_cards, self.hand, jokers_min=tj - k, beat=best)
                if bound is None:
                    return best
                if self._legal(bound.melds):
                    return bound
            for plan in plans:
                forced = sum(val[c % 13 + 1] for c in plan)
                mandatory = self.table_cards + list(plan)
                optional = _minus(self.hand, plan)
                found = self._solve(mandatory, optional, forced, jokers_min=tj - k, beat=best)
                if found is not None:
                    best = found
        return best

    def _legal(self, melds: Sequence[Meld]) -> bool:
        layout = list(self.table) + list(melds) if self.opening else list(melds)
        return judge_play(self.rules, self.table, self.hand, self.opened, layout).legal

    # --- layouts ----------------------------------------------------------------------------

    def tidy(self, melds: list[list[int]], score: int, min_disruption: bool) -> list[list[int]]:
        """Merge runs; keep every table meld when the played cards make melds of their own; with
        ``min_disruption``, add back table melds one by one while the play stays optimal."""
        melds = _merge_runs(melds, self.rules)
        if self.opening:
            return melds
        kept = _unchanged(self.table, melds)
        if len(kept) == len(self.table):
            return melds
        after = [c for m in melds for c in m]
        played = _minus(after, self.table_cards) if _contains(after, self.table_cards) else None
        every = [tuple(sorted(m)) for m in self.table]
        rest = self._rest(every, after, played, score, False)
        if rest is not None:
            return [list(m) for m in every] + rest
        if not min_disruption:
            return melds
        left_table = list(every)
        for key in kept:
            left_table.remove(key)
        best = melds
        current_kept = list(kept)
        for meld in sorted(left_table, key=len, reverse=True):
            trial = [*current_kept, meld]
            found = self._rest(trial, after, played, score, True)
            if found is not None:
                current_kept = trial
                best = [list(m) for m in current_kept] + found
        return best

    def _rest(
        self,
        kept: list[tuple[int, ...]],
        after: list[int],
        played: list[int] | None,
        score: int,
        min_disruption: bool,
    ) -> list[list[int]] | None:
        kept_cards = [c for m in kept for c in m]
        if not _contains(self.table_cards, kept_cards):
            return None
        mandatory_table = _minus(self.table_cards, kept_cards)
        if min_disruption or played is None:
            found = self._solve(mandatory_table, self.hand, kept=kept)
            if found is None or found.score < score:
                return None
            rest = _merge_runs(found.melds, self.rules)
            return rest if self._legal([*kept, *rest]) else None
        if not _contains(after, kept_cards):
            return None
        rest_cards = _minus(after, kept_cards)
        if not rest_cards:
            return []
        w = _weights(self.rules, "arrange", 0, 0, False)
        jokers = rest_cards.count(JOKER)
        w.adjust = [0] * (jokers + 1)
        problem = _problem(self.rules, rest_cards, [], jokers, jokers, w)
        found_rest = solve_dp(problem)
        if found_rest is None:
            return None
        return _merge_runs(found_rest.melds, self.rules)


def _merit(rules: RuleSet, goal: str, verdict: Verdict) -> tuple[int, ...]:
    """How good a legal play is for the goal, as the DP ranks plays (a tidied layout must not
    rank below the DP's own: a re-read meld could give its jokers lower cards)."""
    values = card_values(rules.point_values)
    naturals = sum(values[c] for c in verdict.played if c != JOKER)
    jokers = sum(m.count(JOKER) for m in verdict.layout)
    if goal == "points":
        stood = sum(values[c] for m in verdict.layout for c in readings(m, rules)[0].joker_cards())
        return (naturals + stood, len(verdict.played), -jokers)
    return (len(verdict.played), -jokers, naturals)


def _no_play(table: Sequence[Meld], rules: RuleSet) -> Play:
    layout = _canonical(rules, table)
    return Play(False, layout, (), (), None, sum(m.count(JOKER) for m in table), len(table))


# The searches share per-process tables (lane machinery and pair codes, bounds, set tables) that
# are built as they go and are not safe to build from two threads at once (the gateway answers
# hints from worker threads): one search at a time. Pure Python under the GIL gains nothing from
# a second thread anyway.
_ONE_AT_A_TIME = threading.Lock()


def _forget() -> None:
    """Drop what one position's searches share (bound and suit tables) once it is solved: kept
    across positions they held hundreds of thousands of objects that every full collection of
    a long-running process walks (measured in the bench's warm process: 240,000-660,000
    tracked objects, 30-280 ms a collection, one of them inside a 2 ms search)."""
    forget_bounds()
    forget_tables()


def solve(
    rules: RuleSet,
    table: Sequence[Meld],
    hand: Sequence[int],
    opened: bool,
    goal: Goal = "cards",
    min_disruption: bool = False,
) -> Play:
    """The best play for the goal (see the module text), or ``found=False`` and the table as it
    is when no legal play exists. Every returned play is checked with ``judge_play``."""
    if goal not in ("cards", "points", "opening"):
        raise ValueError(f"goal {goal!r}; allowed: cards, points, opening")
    with _ONE_AT_A_TIME:
        try:
            return _best_play(rules, table, hand, opened, goal, min_disruption)
        finally:
            _forget()


def _best_play(
    rules: RuleSet,
    table: Sequence[Meld],
    hand: Sequence[int],
    opened: bool,
    goal: str,
    min_disruption: bool,
) -> Play:
    search = _Search(rules, table, hand, opened, goal)
    result = search.best()
    if result is None or not result.melds:
        return _no_play(table, rules)
    melds = search.tidy(result.melds, result.score, min_disruption)
    raw = list(search.table) + result.melds if search.opening else result.melds
    layout = list(search.table) + melds if search.opening else melds
    verdict = judge_play(rules, table, hand, opened, raw)
    tidied = judge_play(rules, table, hand, opened, layout)
    if tidied.legal and (
        not verdict.legal or _merit(rules, goal, tidied) >= _merit(rules, goal, verdict)
    ):
        verdict = tidied
    if not verdict.legal:
        return _no_play(table, rules)
    canonical = verdict.layout
    return Play(
        True,
        canonical,
        verdict.played,
        verdict.to_hand,
        verdict.points,
        sum(m.count(JOKER) for m in canonical),
        len(_unchanged(table, canonical)),
    )


def arrange(rules: RuleSet, cards: Sequence[int]) -> Arrangement:
    """Can every natural card of ``cards`` be laid out in valid melds (with at most the jokers
    given)? The layout uses the fewest jokers; the others are free."""
    with _ONE_AT_A_TIME:
        try:
            return _arrangement(rules, cards)
        finally:
            _forget()


def _arrangement(rules: RuleSet, cards: Sequence[int]) -> Arrangement:
    jokers = list(cards).count(JOKER)
    naturals = [c for c in cards if c != JOKER]
    if not naturals:
        return Arrangement(True, (), jokers)
    w = _weights(rules, "arrange", 0, jokers, False)
    w.joker = [-1] * 14
    w.adjust = [0] * (jokers + 1)
    problem = _problem(rules, naturals, [], jokers, 0, w)
    if _stranded(problem):
        return Arrangement(False, (), 0)
    # The score of an arrangement is minus its jokers (every natural is mandatory), so the
    # fewest jokers are found by demanding as few as the upper bound allows, then one more, and
    # so on: the first floor reached is the optimum (every better one was refuted). A
    # depth-first witness search tries the bound itself (on a full table it nearly always
    # finds a play there at once); when it refutes that floor or gives up, a Ladder lowers the
    # floor one joker at a time without starting over (a fresh DP per floor, and a witness
    # search per floor, cost two to three times as much on 40-60 cards).
    top = upper_bounds(problem)[0][4][0]  # minus the jokers the stranded cards need at least
    problem, found, refuted, mirrored = _race(problem, top, ARRANGE_PATIENCE)
    if found is None:
        ladder = Ladder(problem)
        floor = top - 1 if refuted else top
        while found is None and floor >= -jokers:
            found = ladder.reach(floor)
            floor -= 1
    if found is None:
        return Arrangement(False, (), 0)
    if mirrored:
        found = mirror_back(found)
    melds = _merge_runs(found.melds, rules)
    return Arrangement(True, _canonical(rules, melds), jokers - found.jokers)
