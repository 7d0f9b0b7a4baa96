"""The dynamic program under the solver: arrange a multiset of cards into melds, rank by rank.

In the spirit of van Rijn, Takes and Vis (2015): ranks are processed in order (A..K); each suit
has two *lanes* (one per copy of the deck) and a lane holds at most one open run. The state
between two ranks is, for every suit, the pair of lane states (idle, or an open run of length
1, 2 or 3+ and whether it holds a natural card yet), plus the number of jokers used so far
(and, for an opening, the points reached so far, capped at the threshold). At each rank every
card of that rank is either put on a lane (extending or starting a run), or into the sets of
that rank (groups of distinct suits, jokers filling), or - for an optional (hand) card - left
out. Mandatory (table) cards must be placed. Within a rank the suits are decided one after the
other (a profile DP), so the work per rank is a sum over suits, not a product.

Jokers stand for a card of the lane's suit at the current rank, or for a missing suit of a set.
A run must hold a natural card, so the lane state remembers whether it has one. When the rule
set limits runs below 13 cards the lane tracks the exact length (and may close one run and
start the next in the same step). With ``ace: wrap`` a lane may enter rank A already running
(the run crosses K -> A): its first segment is remembered when it closes and the lane must end
rank K with a run that completes it (same lane, so the two segments never overlap).

Everything here is pure: integers in, melds out. The bounds (``bounds``), the searches under a
floor (``search``, ``ladder``) and the goals (``shared.solver.goals``) build on it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from shared.core.cards import JOKER, make_card

NONE, NAT, JOK = 0, 1, 2

# Lane states are tuples, interned to small ints per configuration:
#   ("I", R)               idle; R: None, or (length, natural) of a closed crossing segment
#   ("S",)                 must start the crossing segment at the first rank (ace wrap)
#   ("R", l, n, x, R)      an open run of length l (capped or exact), n: holds a natural,
#                          x: it is the crossing segment (ace wrap), R as for idle
LaneState = tuple[object, ...]


@dataclass(frozen=True)
class Config:
    """The meld parameters the DP depends on."""

    wrap: bool
    run_max: int
    set_max: int

    @property
    def exact(self) -> bool:
        """Track exact run lengths (only needed when runs are capped below 13 cards)."""
        return self.run_max < 13


@dataclass
class LaneMove:
    take: int  # NONE, NAT or JOK
    new: int  # new lane state code
    closes: bool  # the lane's open run ends before this rank
    starts: bool  # a new run starts at this rank


class Lanes:
    """Lane states and moves of one configuration (built once, cached)."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.states: list[LaneState] = []
        self.codes: dict[LaneState, int] = {}
        self.moves: list[list[LaneMove]] = []
        self.end_ok: list[bool] = []
        self.idle = self.code(("I", None))
        self.start = self.code(("S",)) if cfg.wrap else -1
        done = 0
        while done < len(self.states):
            self.moves.append(self._moves(self.states[done]))
            self.end_ok.append(self._end_ok(self.states[done]))
            done += 1
        self.above = self._simulation()
        # per lane state: itself and the states that dominate it (for quick dominance tests)
        self.up = [frozenset([state, *self.above[state]]) for state in range(len(self.above))]

    def _simulation(self) -> list[list[int]]:
        """For each lane state, the states that strictly dominate it: t dominates s when t can
        end wherever s can and answer every move of s (same card taken) with a move to a state
        dominating s's (the greatest simulation, computed as a fixpoint)."""
        n = len(self.states)
        le = [[(not self.end_ok[a]) or self.end_ok[b] for b in range(n)] for a in range(n)]
        changed = True
        while changed:
            changed = False
            for a in range(n):
                for b in range(n):
                    if not le[a][b] or a == b:
                        continue
                    for ma in self.moves[a]:
                        if not any(
                            mb.take == ma.take and le[ma.new][mb.new] for mb in self.moves[b]
                        ):
                            le[a][b] = False
                            changed = True
                            break
        return [[b for b in range(n) if b != a and le[a][b] and not le[b][a]] for a in range(n)]

    def code(self, state: LaneState) -> int:
        found = self.codes.get(state)
        if found is None:
            found = self.codes[state] = len(self.states)
            self.states.append(state)
        return found

    def _length(self, length: int) -> int:
        return length if self.cfg.exact else min(length, 3)

    def _moves(self, state: LaneState) -> list[LaneMove]:
        cfg = self.cfg
        moves: list[LaneMove] = []
        takes = (NAT, JOK)
        if state[0] == "S":
            for take in takes:
                moves.append(
                    LaneMove(take, self.code(("R", 1, take == NAT, True, None)), False, True)
                )
            return moves
        if state[0] == "I":
            pending = state[1]
            moves.append(LaneMove(NONE, self.code(state), False, False))
            for take in takes:
                fresh: LaneState = ("R", 1, take == NAT, False, pending)
                moves.append(LaneMove(take, self.code(fresh), False, True))
            return moves
        _, length, natural, crossing, pending = state
        assert isinstance(length, int)
        if not cfg.exact or length < cfg.run_max:
            for take in takes:
                longer: LaneState = (
                    "R",
                    self._length(length + 1),
                    bool(natural) or take == NAT,
                    crossing,
                    pending,
                )
                moves.append(LaneMove(take, self.code(longer), False, False))
        closed: object = "no"
        if crossing:
            closed = (length, natural)
        elif length >= 3 and natural:
            closed = pending
        if closed != "no":
            moves.append(LaneMove(NONE, self.code(("I", closed)), True, False))
            if cfg.exact:
                for take in takes:
                    new = ("R", 1, take == NAT, False, closed)
                    moves.append(LaneMove(take, self.code(new), True, True))
        return moves

    def _end_ok(self, state: LaneState) -> bool:
        cfg = self.cfg
        if state[0] == "I":
            return state[1] is None
        if state[0] == "S":
            return False
        _, length, natural, crossing, pending = state
        assert isinstance(length, int)
        if crossing:  # one run all the way round: 13 cards
            return bool(natural) and cfg.run_max >= 13
        if pending is not None:
            assert isinstance(pending, tuple)
            total = length + pending[0]
            if length >= 3 and pending[0] >= 3 and natural and pending[1]:
                return False  # two runs of their own: the same cards without crossing
            return total >= 3 and total <= cfg.run_max and bool(natural or pending[1])
        return length >= 3 and bool(natural)


@dataclass
class PairMove:
    new: int  # new pair code
    nat: int  # lanes taking a natural
    jok: int  # lanes taking a joker
    moves: tuple[LaneMove, LaneMove]
    swapped: bool  # the new pair's order is (lane 1, lane 0)


class UpMasks(dict[int, int]):
    """Pair code -> ``Pairs.up_mask`` of it, made on first use. ``Pairs.code`` clears them all
    when it makes a code (rare once the lane bound's tables are filled), so no mask misses one:
    a missed dominator only costs a prune, but masks made early missed most of them (measured:
    twenty times the states on 60-card tables)."""

    def __init__(self, pairs: Pairs) -> None:
        super().__init__()
        self.pairs = pairs

    def __missing__(self, pair: int) -> int:
        found = self[pair] = self.pairs.up_mask(pair)
        return found


class Pairs:
    """Unordered pairs of lane states (the two copies of a suit) and their joint moves."""

    def __init__(self, lanes: Lanes) -> None:
        self.lanes = lanes
        self.pairs: list[tuple[int, int]] = []
        self.codes: dict[tuple[int, int], int] = {}
        self.moves: dict[int, list[PairMove]] = {}
        self.options: dict[tuple[int, int, int], list[tuple[int, int, int, int, int]]] = {}
        self._end: dict[int, bool] = {}
        self._heights: list[int] = []
        self._up = UpMasks(self)

    def end_ok(self, pair: int) -> bool:
        """Both lanes of the pair may end here."""
        found = self._end.get(pair)
        if found is None:
            a, b = self.pairs[pair]
            found = self._end[pair] = self.lanes.end_ok[a] and self.lanes.end_ok[b]
        return found

    def height(self, pair: int) -> int:
        """How many lane states dominate the pair's two lanes (fewer: a better pair; a pair
        that dominates another has the lower height); orders ties."""
        a, b = self.pairs[pair]
        above = self.lanes.above
        return len(above[a]) + len(above[b])

    def tables(self) -> tuple[list[int], UpMasks]:
        """Per pair code: its height, and (``UpMasks``) the codes that dominate it or are it,
        as a bit mask (for the dominance tests)."""
        heights = self._heights
        for pair in range(len(heights), len(self.pairs)):
            heights.append(self.height(pair))
        return heights, self._up

    def up_mask(self, pair: int) -> int:
        """A bit mask of the pair codes made so far that dominate ``pair`` or are it (lane by
        lane, in either order). Looks codes up without making any: making every dominating
        pair, and then theirs, made tens of thousands of codes under exact run lengths."""
        a, b = self.pairs[pair]
        up = self.lanes.up
        codes = self.codes
        mask = 0
        for c in up[a]:
            for d in up[b]:
                found = codes.get((c, d) if c <= d else (d, c))
                if found is not None:
                    mask |= 1 << found
        return mask

    def code(self, a: int, b: int) -> int:
        key = (a, b) if a <= b else (b, a)
        found = self.codes.get(key)
        if found is None:
            found = self.codes[key] = len(self.pairs)
            self.pairs.append(key)
            if self._up:  # a mask made before this code could miss it: make them again
                self._up.clear()
        return found

    def pair_moves(self, pair: int) -> list[PairMove]:
        found = self.moves.get(pair)
        if found is None:
            a, b = self.pairs[pair]
            found = []
            seen: set[tuple[int, int, int]] = set()
            for ma in self.lanes.moves[a]:
                for mb in self.lanes.moves[b]:
                    nat = (ma.take == NAT) + (mb.take == NAT)
                    jok = (ma.take == JOK) + (mb.take == JOK)
                    new = self.code(ma.new, mb.new)
                    sig = (new, nat, jok)
                    if sig in seen:
                        continue
                    seen.add(sig)
                    found.append(PairMove(new, nat, jok, (ma, mb), ma.new > mb.new))
            self.moves[pair] = found
        return found

    def suit_options(
        self, pair: int, table: int, hand: int
    ) -> list[tuple[int, int, int, int, int]]:
        """(new pair, jokers on lanes, naturals to sets, hand cards used, move index) for one
        suit at one rank with ``table`` mandatory and ``hand`` optional naturals."""
        key = (pair, table, hand)
        found = self.options.get(key)
        if found is None:
            found = []
            seen = set()
            for index, move in enumerate(self.pair_moves(pair)):
                for n in range(max(table, move.nat), min(table + hand, move.nat + 2) + 1):
                    option = (move.new, move.jok, n - move.nat, n - table)
                    if option not in seen:
                        seen.add(option)
                        found.append((*option, index))
            self.options[key] = found
        return found


@cache
def set_groups(
    suits_m: tuple[int, ...], jokers: int, set_max: int
) -> tuple[tuple[tuple[int, ...], int], ...] | None:
    """Sets of one rank holding ``suits_m[s]`` naturals of suit s and exactly ``jokers`` jokers:
    a tuple of (suits, jokers in that set), or None when impossible."""
    items = [s for s, m in enumerate(suits_m) for _ in range(m)]
    if not items:
        return () if jokers == 0 else None
    most = max(suits_m)
    for groups in range(most, len(items) + 1):
        found = _assign(items, groups, set_max)
        for assignment in found:
            low = sum(max(0, 3 - len(g)) for g in assignment)
            high = sum(set_max - len(g) for g in assignment)
            if low <= jokers <= high:
                extra = jokers - low
                out = []
                for g in assignment:
                    j = max(0, 3 - len(g))
                    add = min(extra, set_max - len(g) - j)
                    extra -= add
                    out.append((tuple(g), j + add))
                return tuple(out)
    return None


def _assign(items: list[int], groups: int, set_max: int) -> list[list[list[int]]]:
    """Ways to put suit items into ``groups`` non-empty groups of distinct suits (up to order)."""
    results: list[list[list[int]]] = []
    _place(items, groups, set_max, 0, [], results)
    return results


def _place(
    items: list[int],
    groups: int,
    set_max: int,
    i: int,
    current: list[list[int]],
    results: list[list[list[int]]],
) -> None:
    """``_assign`` from item ``i`` on, with ``current`` groups so far (a function of its own: a
    closure calling itself is a reference cycle, freed only by the cyclic collector)."""
    if i == len(items):
        if len(current) == groups and all(current):
            results.append([list(g) for g in current])
        return
    suit = items[i]
    for g in current:
        if suit not in g and len(g) < set_max:
            g.append(suit)
            _place(items, groups, set_max, i + 1, current, results)
            g.pop()
    if len(current) < groups:
        current.append([suit])
        _place(items, groups, set_max, i + 1, current, results)
        current.pop()


@cache
def set_joker_counts(c1: int, c2: int, set_max: int) -> tuple[int, ...]:
    """Feasible joker counts for the sets of one rank where c1 suits give one natural and c2
    suits give two (each way of grouping the naturals allows a range of jokers)."""
    items = [s for s in range(c2) for _ in range(2)] + list(range(c2, c2 + c1))
    if not items:
        return (0,)
    feasible: set[int] = set()
    for groups in range(2 if c2 else 1, len(items) + 1):
        for assignment in _assign(items, groups, set_max):
            low = sum(max(0, 3 - len(g)) for g in assignment)
            high = sum(set_max - len(g) for g in assignment)
            feasible.update(range(low, min(high, 16) + 1))
    return tuple(sorted(feasible))


_LANES: dict[Config, tuple[Lanes, Pairs]] = {}


def machinery(cfg: Config) -> tuple[Lanes, Pairs]:
    found = _LANES.get(cfg)
    if found is None:
        lanes = Lanes(cfg)
        found = _LANES[cfg] = (lanes, Pairs(lanes))
    return found


@dataclass
class Problem:
    """One arrangement problem. Counts are indexed [rank 1..13][suit 0..3] (index 0 unused)."""

    cfg: Config
    table: Sequence[Sequence[int]]  # mandatory naturals
    hand: Sequence[Sequence[int]]  # optional naturals
    jokers_max: int  # jokers available
    jokers_min: int  # jokers that must be placed
    nat_weight: Sequence[int]  # score per hand natural placed, by rank
    joker_weight: Sequence[int]  # score per joker placed, by rank
    point_value: Sequence[int]  # points by rank (for the opening threshold)
    joker_adjust: Sequence[int]  # added to the score by the number of jokers used in all
    threshold: int = 0  # points the placed cards must reach (an opening); 0: none
    need_card: bool = False  # at least one optional card or joker beyond jokers_min is placed
    needy: Sequence[Sequence[int]] | None = None  # optional cards no meld holds without a joker


@dataclass
class Result:
    score: int
    jokers: int
    points: int  # capped at the threshold when there is one
    melds: list[list[int]]


@dataclass
class KeyLayout:
    """Bit positions of a packed state key: four lane pairs, jokers, points, c1, c2."""

    width: int
    js: int
    ps: int
    c1s: int
    c2s: int
    mask: int

    def option_key(self, shift: int, pair: int, new: int, jok: int, m: int) -> int:
        """What one suit option adds to a key: the suit's lane pair (at ``shift``) goes from
        ``pair`` to ``new``, ``jok`` more jokers are used, and ``m`` (1 or 2, else nothing)
        counts one more set card of that many copies."""
        dkey = ((new - pair) << shift) + (jok << self.js)
        if m == 1:
            dkey += 1 << self.c1s
        elif m == 2:
            dkey += 1 << self.c2s
        return dkey


def key_layout(cfg: Config) -> KeyLayout:
    """Where each part of a state key lies under ``cfg`` (a lane pair code takes more bits
    where there are more lane states: exact run lengths, runs crossing K-A)."""
    width = 8 if not cfg.wrap and not cfg.exact else (10 if not cfg.wrap else 24)
    js = 4 * width
    return KeyLayout(width, js, js + 4, js + 12, js + 15, (1 << width) - 1)


# the bound (either: ``bounds``, ``lanes``) of a state that cannot place every mandatory card
UNREACHABLE = -(1 << 40)


def solve_dp(p: Problem) -> Result | None:
    """The arrangement of highest score (see ``_solve``). Under ``ace: wrap`` the cycle of ranks
    is first turned so that it starts where the fewest runs can cross (``turned``)."""
    turned, order = turned_problem(p)
    return turn_back(_solve(turned), order)


def turned_problem(p: Problem) -> tuple[Problem, list[int] | None]:
    """Under ``ace: wrap``: the problem with its cycle of ranks turned so that the DP's rank 1 is
    the rank after the weakest boundary (where the fewest runs can cross), and the order (DP rank
    -> real rank) for ``turn_back``; else the problem itself and None."""
    if not p.cfg.wrap:
        return p, None

    avail = [[p.table[r][s] + p.hand[r][s] for s in range(4)] for r in range(14)]

    def crossing(first: int) -> tuple[int, int]:
        last = (first - 2) % 13 + 1
        return (sum(min(avail[last][s], avail[first][s]) for s in range(4)), first)

    first = min(range(1, 14), key=crossing)
    if first == 1:
        return p, None
    order = [0] + [(first - 1 + i) % 13 + 1 for i in range(13)]  # DP rank -> real rank
    return _reordered(p, order), order


def _reordered(p: Problem, order: list[int]) -> Problem:
    """The problem with its ranks in another order (``order``: DP rank -> real rank)."""

    def turn(rows: Sequence[Any]) -> list[Any]:
        return [rows[order[i]] for i in range(14)]

    return dataclasses.replace(
        p,
        table=turn(p.table),
        hand=turn(p.hand),
        nat_weight=turn(p.nat_weight),
        joker_weight=turn(p.joker_weight),
        point_value=turn(p.point_value),
        needy=turn(p.needy) if p.needy is not None else None,
    )


def turn_back(found: Result | None, order: list[int] | None) -> Result | None:
    """The melds of a turned problem's answer in real ranks (``turned_problem``)."""
    if found is None or order is None:
        return found
    back = {make_card(i, s): make_card(order[i], s) for i in range(1, 14) for s in range(4)}
    back[JOKER] = JOKER
    found.melds = [[back[c] for c in meld] for meld in found.melds]
    return found


MIRRORED = [0, *range(13, 0, -1)]  # DP rank -> real rank, K first


def mirrored_problem(p: Problem) -> Problem:
    """The problem with its ranks read the other way (K is the DP's rank 1, A its rank 13), for
    ace low only: every meld reads the same both ways, the optimum is the same. The searches
    cost differently: one meets the cards that decide a position early, the other late
    (measured on 40-card tables: a factor of two to fifteen either way on the slowest)."""
    assert not p.cfg.wrap
    return _reordered(p, MIRRORED)


def mirror_back(found: Result) -> Result:
    """The melds of a mirrored problem's answer in real ranks (``mirrored_problem``), each in
    rank order again (the DP builds a run in its own order)."""
    turn_back(found, MIRRORED)
    found.melds = [meld[::-1] for meld in found.melds]
    return found


def initial_states(p: Problem, lanes: Lanes, pairs: Pairs, width: int) -> dict[int, int]:
    """The packed states before rank 1 (score 0): every lane idle, or under ``ace: wrap`` some
    lanes already running across the cut."""
    cfg = p.cfg
    jmax = p.jokers_max
    valued = bool(p.threshold) or len(set(p.joker_weight[1:14])) > 1
    options_by_suit = []
    for suit in range(4):
        if cfg.wrap:  # lanes may enter the first rank already running (crossing K -> A)
            # A crossing run holds a natural on each side of the cut, within reach of it (the
            # ranks between are jokers); one that does not is the same meld read without
            # crossing. So count the naturals that close to the cut on each side.
            reach = min(jmax + 1, 13)
            before = sum(p.table[13 - k][suit] + p.hand[13 - k][suit] for k in range(reach))
            after = sum(p.table[1 + k][suit] + p.hand[1 + k][suit] for k in range(reach))
            if valued and jmax:
                # ... but where a joker's value depends on the rank it stands at (points, an
                # opening's threshold), a side of jokers only matters: K(JK) A 2 3 reads the
                # joker as a king, the same cards laid A 2 3 4(JK) as a four
                before, after = max(before, 1), max(after, 1)
            crossing = min(2, before, after)
            codes = [lanes.idle, lanes.idle]
            found = [pairs.code(lanes.idle, lanes.idle)]
            for k in range(crossing):
                codes[k] = lanes.start
                found.append(pairs.code(codes[0], codes[1]))
        else:
            found = [pairs.code(lanes.idle, lanes.idle)]
        options_by_suit.append(found)
    frontier: dict[int, int] = {}
    for a in options_by_suit[0]:
        for b in options_by_suit[1]:
            for c in options_by_suit[2]:
                for d in options_by_suit[3]:
                    frontier[a | b << width | c << 2 * width | d << 3 * width] = 0
    return frontier


def _solve(p: Problem) -> Result | None:
    """The arrangement of highest score (plus ``joker_adjust`` for the jokers it uses), or None
    when no arrangement places every mandatory card (and reaches the threshold). Every state is
    kept but the dominated ones: the searches under a floor (``search``, ``ladder``) are the
    ones that drop states by their bound."""
    lanes, pairs = machinery(p.cfg)
    cfg = p.cfg
    lay = key_layout(cfg)
    width, js, ps, c1s, c2s, mask = lay.width, lay.js, lay.ps, lay.c1s, lay.c2s, lay.mask
    threshold = p.threshold
    jmax = p.jokers_max
    need_card = p.need_card and not threshold
    frontier = initial_states(p, lanes, pairs, width)
    initial = dict(frontier)
    history: list[list[dict[int, int]]] = []
    clear_c = (1 << c1s) - 1
    for rank in range(1, 14):
        tab = p.table[rank]
        hnd = p.hand[rank]
        wn = p.nat_weight[rank]
        wj = p.joker_weight[rank]
        pv = p.point_value[rank]
        backs: list[dict[int, int]] = []
        current = frontier
        for suit in range(4):
            shift = width * suit
            t = tab[suit]
            h = hnd[suit]
            nxt: dict[int, int] = {}
            back: dict[int, int] = {}
            cache: dict[int, list[tuple[int, int, int, int]]] = {}
            get = nxt.get
            for key, score in current.items():
                pair = (key >> shift) & mask
                options = cache.get(pair)
                if options is None:
                    options = []
                    for new, jok, m, used, index in pairs.suit_options(pair, t, h):
                        dkey = lay.option_key(shift, pair, new, jok, m)
                        dpts = used if need_card else pv * (used + jok)
                        options.append((dkey, wn * used + wj * jok, dpts, index))
                    cache[pair] = options
                for dkey, dscore, dpts, index in options:
                    nk = key + dkey
                    if (nk >> js) & 15 > jmax:
                        continue
                    if threshold and dpts:
                        pts = (key >> ps) & 255
                        nk += (min(threshold, pts + dpts) - pts) << ps
                    elif need_card and dpts and not (key >> ps) & 1:
                        nk += 1 << ps
                    s2 = score + dscore
                    old = get(nk)
                    if old is None or old < s2:
                        nxt[nk] = s2
                        back[nk] = key << 12 | index
            nxt = _prune_dominated(nxt, pairs, width, mask, js)
            backs.append(back)
            current = nxt
        # resolve the sets of this rank
        resolved: dict[int, int] = {}
        back = {}
        get = resolved.get
        for key, score in current.items():
            c1 = (key >> c1s) & 7
            c2 = (key >> c2s) & 7
            base = key & clear_c
            for j in set_joker_counts(c1, c2, cfg.set_max):
                nk = base + (j << js)
                if (nk >> js) & 15 > jmax:
                    break
                if threshold and j:
                    pts = (key >> ps) & 255
                    nk += (min(threshold, pts + pv * j) - pts) << ps
                s2 = score + wj * j
                old = get(nk)
                if old is None or old < s2:
                    resolved[nk] = s2
                    back[nk] = key << 5 | j
        resolved = _prune_dominated(resolved, pairs, width, mask, js)
        backs.append(back)
        history.append(backs)
        frontier = resolved
    best = best_end(p, frontier, pairs, lay, None)
    if best is None:
        return None
    total, key = best
    melds = rebuild_melds(p, history, key, initial, lanes, pairs, lay)
    return Result(total, (key >> js) & 15, (key >> ps) & 255, melds)


def best_end(
    p: Problem, frontier: dict[int, int], pairs: Pairs, lay: KeyLayout, floor: int | None
) -> tuple[int, int] | None:
    """The best end state (its total with ``joker_adjust``, its key) at or above ``floor``:
    the jokers, points and card the problem demands, every lane closed."""
    width, js, ps, mask = lay.width, lay.js, lay.ps, lay.mask
    threshold = p.threshold
    need_card = p.need_card and not threshold
    end_ok = pairs.end_ok
    best: tuple[int, int] | None = None
    for key, score in frontier.items():
        jokers = (key >> js) & 15
        if jokers < p.jokers_min or (threshold and (key >> ps) & 255 < threshold):
            continue
        if need_card and not (key >> ps) & 1 and jokers <= p.jokers_min:
            continue
        if not all(end_ok(key >> (width * s) & mask) for s in range(4)):
            continue
        total = score + p.joker_adjust[jokers]
        if floor is not None and total < floor:
            continue
        if best is None or best[0] < total:
            best = (total, key)
    return best


SuitIndex = tuple[list[int], tuple[dict[int, int], dict[int, int], dict[int, int], dict[int, int]]]
"""Per suit: a bit mask of the lane pairs the kept states have, and lane pair -> the bits of
the kept states that have it."""


def new_index() -> SuitIndex:
    """An empty ``SuitIndex``."""
    return [0, 0, 0, 0], ({}, {}, {}, {})


def dominators(parts: tuple[int, int, int, int], upmask: UpMasks, index: SuitIndex) -> int:
    """The bits of the indexed states whose lane pair dominates ``parts`` in every suit
    (``upmask[pair]``: the pairs that dominate ``pair``, as a mask); 0 when none does. Only
    the pairs some kept state has are looked up (a mask test finds them)."""
    present, seen = index
    hits = -1
    for suit in range(4):
        pairs = upmask[parts[suit]] & present[suit]
        found = 0
        table = seen[suit]
        while pairs:
            low = pairs & -pairs
            found |= table[low.bit_length() - 1]
            pairs ^= low
        hits &= found
        if not hits:
            return 0
    return hits


def index_state(parts: tuple[int, int, int, int], index: SuitIndex, bit: int) -> None:
    """Record a kept state (``bit``) under its lane pair in each suit."""
    present, seen = index
    for suit in range(4):
        part = parts[suit]
        present[suit] |= 1 << part
        table = seen[suit]
        table[part] = table.get(part, 0) | bit


ScoredIndex = tuple[SuitIndex, list[int]]
"""A ``SuitIndex`` of states and their scores (bit i: the state of ``scores[i]``)."""


def new_scored() -> ScoredIndex:
    """An empty ``ScoredIndex``."""
    return new_index(), []


def beaten(
    parts: tuple[int, int, int, int], upmask: UpMasks, index: ScoredIndex, score: int
) -> bool:
    """Some indexed state dominates ``parts`` in every suit with at least ``score``."""
    hits = dominators(parts, upmask, index[0])
    scores = index[1]
    while hits:
        low = hits & -hits
        if scores[low.bit_length() - 1] >= score:
            return True
        hits ^= low
    return False


def record(parts: tuple[int, int, int, int], index: ScoredIndex, score: int) -> None:
    """Add a state with its score to a ``ScoredIndex``."""
    index_state(parts, index[0], 1 << len(index[1]))
    index[1].append(score)


def _prune_dominated(
    states: dict[int, int], pairs: Pairs, width: int, mask: int, js: int
) -> dict[int, int]:
    """Drop every state that another state dominates: the same jokers, points and set counts,
    a lane pair at least as good in every suit (``Lanes.above``), and a score at least as high.
    States are visited best score first (ties: the better lanes first), so a state need only be
    compared with the kept ones: per group and suit, a bit mask of the kept states by lane pair
    says at once whether some kept state has, in every suit, a pair dominating the state's (a
    plain all-pairs test was quadratic: minutes on tables with seven jokers)."""
    height, upmask = pairs.tables()
    w2, w3 = 2 * width, 3 * width
    groups: dict[int, list[tuple[int, int, int]]] = {}
    for key, score in states.items():
        rank = (
            height[key & mask]
            + height[(key >> width) & mask]
            + height[(key >> w2) & mask]
            + height[key >> w3 & mask]
        )
        group = groups.get(key >> js)
        if group is None:
            groups[key >> js] = [(-score, rank, key)]
        else:
            group.append((-score, rank, key))
    kept: dict[int, int] = {}
    for items in groups.values():
        if len(items) == 1:
            score, _, key = items[0]
            kept[key] = -score
            continue
        items.sort()
        index = new_index()
        bit = 1
        for score, rank, key in items:
            parts = (key & mask, (key >> width) & mask, (key >> w2) & mask, key >> w3 & mask)
            if rank and dominators(parts, upmask, index):
                continue
            kept[key] = -score
            index_state(parts, index, bit)
            bit <<= 1
    return kept


def rebuild_melds(
    p: Problem,
    history: list[list[dict[int, int]]],
    end: int,
    initial: dict[int, int],
    lanes: Lanes,
    pairs: Pairs,
    lay: KeyLayout,
) -> list[list[int]]:
    """Walk the back-pointers from ``end`` and build the melds (``history``: per rank, the back
    pointers of its four suits and its sets, as the DP and the searches under a floor keep
    them)."""
    width, mask = lay.width, lay.mask
    choices: list[tuple[list[tuple[int, int]], int]] = []
    key = end
    for rank in range(13, 0, -1):
        backs = history[rank - 1]
        packed = backs[4][key]
        key, set_jokers = packed >> 5, packed & 31
        per_suit: list[tuple[int, int]] = [(0, 0)] * 4
        for suit in range(3, -1, -1):
            packed = backs[suit][key]
            prev, index = packed >> 12, packed & 4095
            m = ((key >> lay.c1s) & 7) - ((prev >> lay.c1s) & 7)
            m += 2 * (((key >> lay.c2s) & 7) - ((prev >> lay.c2s) & 7))
            per_suit[suit] = (index, m)
            key = prev
        choices.append((per_suit, set_jokers))
    assert key in initial
    choices.reverse()
    melds: list[list[int]] = []
    slot_runs: list[list[list[int] | None]] = [[None, None] for _ in range(4)]
    crossing: list[list[list[int] | None]] = [[None, None] for _ in range(4)]
    pair_of = [(key >> (width * s)) & mask for s in range(4)]
    for rank in range(1, 14):
        per_suit, set_jokers = choices[rank - 1]
        m_vec = []
        for suit in range(4):
            index, m = per_suit[suit]
            move = pairs.pair_moves(pair_of[suit])[index]
            m_vec.append(m)
            runs = slot_runs[suit]
            for slot in range(2):
                lm = move.moves[slot]
                if lm.closes:
                    run = runs[slot]
                    assert run is not None
                    state = lanes.states[pairs.pairs[pair_of[suit]][slot]]
                    if state[0] == "R" and state[3]:
                        crossing[suit][slot] = run  # joined with the lane's last run at the end
                    else:
                        melds.append(run)
                    runs[slot] = None
                if lm.take != NONE:
                    card = make_card(rank, suit) if lm.take == NAT else JOKER
                    if lm.starts:
                        runs[slot] = [card]
                    else:
                        run = runs[slot]
                        assert run is not None
                        run.append(card)
            if move.swapped:
                runs.reverse()
                crossing[suit].reverse()
            pair_of[suit] = move.new
        groups = set_groups(tuple(m_vec), set_jokers, p.cfg.set_max)
        assert groups is not None
        for suits, jokers in groups:
            melds.append([make_card(rank, s) for s in suits] + [JOKER] * jokers)
    for suit in range(4):
        for slot in range(2):
            run = slot_runs[suit][slot]
            head = crossing[suit][slot]
            if run is not None:
                melds.append(run + head if head is not None else run)
            elif head is not None:
                melds.append(head)
    return melds
