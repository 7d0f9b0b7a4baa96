"""Property tests of the rules core (hypothesis).

(a) meld readings agree with a brute-force oracle written here from RULES.md's definitions only;
(b) random valid tables survive legal rearrangements, with cards conserved;
(c) the order of input cards never changes a verdict;
(d) cards and canonical layouts round-trip through print and parse.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations_with_replacement, pairwise
from random import Random
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from shared.cli.judge import judge
from shared.core.cards import JOKER, card_str, cards_str, parse_card, sorted_cards
from shared.core.judgement import judge_play
from shared.core.melds import best_reading, card_values, readings
from shared.core.rulesets import RuleSet, rule_set

# ======================================================================= the oracle
#
# Written from RULES.md's definitions and nothing else: a card is suit * 13 + rank - 1, JOKER 52.
#   set: 3 or 4 (set_max) cards of one rank, all suits distinct;
#   run: 3..run_max cards of one suit, consecutive ranks, no rank twice; with ace `low` the ranks
#        are an interval of 1..13, with `wrap` a cyclic interval (K may be followed by A, 2 ...);
#   a meld holds at least one natural card (Decision 3), and is legal when some assignment of
#   its jokers to natural cards is a legal natural meld.


def rank(card: int) -> int:
    """Rank 1..13."""
    return card % 13 + 1


def suit(card: int) -> int:
    """Suit 0..3."""
    return card // 13


def natural_meld(cards: Sequence[int], ace: str, run_max: int, set_max: int) -> bool:
    """Is a meld of natural cards only a set or a run, straight from the definitions."""
    n = len(cards)
    if n < 3:
        return False
    ranks = {rank(c) for c in cards}
    suits = {suit(c) for c in cards}
    if len(ranks) == 1 and len(suits) == n and n <= set_max:
        return True
    if len(suits) != 1 or len(ranks) != n or n > run_max:
        return False
    if ace == "low":
        return max(ranks) - min(ranks) == n - 1
    return any({(start + k - 1) % 13 + 1 for k in range(n)} == ranks for start in range(1, 14))


def oracle_assignments(
    cards: Sequence[int], ace: str, run_max: int, set_max: int, prune: bool = True
) -> set[tuple[int, ...]]:
    """Every multiset (sorted tuple) of natural cards the jokers can stand for in a legal meld.

    Without pruning every joker ranges over all 52 cards. With pruning (used from 3 jokers on, to
    stay fast) a joker ranges over the cards sharing a rank or a suit with the first natural card:
    in a set every card shares the rank, in a run every card shares the suit, so nothing legal
    is lost; ``test_oracle_pruning_loses_nothing`` checks that claim against the full search.
    """
    naturals = [c for c in cards if c != JOKER]
    jokers = len(cards) - len(naturals)
    if not naturals:
        return set()
    first = naturals[0]
    pool = [
        c
        for c in range(52)
        if not prune or jokers <= 2 or rank(c) == rank(first) or suit(c) == suit(first)
    ]
    return {
        combo
        for combo in combinations_with_replacement(pool, jokers)
        if natural_meld([*naturals, *combo], ace, run_max, set_max)
    }


@dataclass(frozen=True)
class MeldRules:
    """The meld parameters of one example."""

    ace: str
    run_max: int
    set_max: int

    def rules(self) -> RuleSet:
        """A rule set with these parameters (8 jokers so any count of jokers is in the deck)."""
        return rule_set(
            "robbers",
            {"ace": self.ace, "run_max": self.run_max, "set_max": self.set_max, "jokers": 8},
        )


meld_rules = st.builds(
    MeldRules,
    ace=st.sampled_from(["low", "wrap"]),
    run_max=st.one_of(st.just(13), st.integers(3, 13)),
    set_max=st.sampled_from([4, 4, 3]),
)


@st.composite
def candidate_melds(draw: st.DrawFn, min_size: int = 1, max_size: int = 8) -> list[int]:
    """Card groups near the boundary of validity: runs and sets (some wrapping round the king,
    some with a wrong card), same-suit or same-rank jumbles, and random cards; 0-4 jokers."""
    likely = st.integers(max(min_size, 3), min(max_size, max(min_size, 3) + 2))
    size = draw(st.one_of(likely, st.integers(min_size, max_size)))
    jokers = draw(st.integers(0, min(4, size - 1)) | st.integers(0, min(4, size)))
    naturals = size - jokers
    shape = draw(st.sampled_from(["run", "run", "set", "suit", "rank", "any"]))
    the_suit = draw(st.integers(0, 3))
    the_rank = draw(st.integers(1, 13))
    rng = Random(draw(st.integers(0, 2**32 - 1)))  # positions of the jokers, order of the cards
    if shape == "run":
        ranks = [(the_rank - 1 + k) % 13 + 1 for k in range(size)]
        found = [the_suit * 13 + r - 1 for r in rng.sample(ranks, naturals)]
    elif shape == "set":
        suits = draw(st.lists(st.integers(0, 3), min_size=naturals, max_size=naturals))
        found = [s * 13 + the_rank - 1 for s in suits]
    elif shape == "suit":
        ranks = draw(st.lists(st.integers(1, 13), min_size=naturals, max_size=naturals))
        found = [the_suit * 13 + r - 1 for r in ranks]
    elif shape == "rank":
        suits = draw(st.lists(st.integers(0, 3), min_size=naturals, max_size=naturals))
        found = [s * 13 + the_rank - 1 for s in suits]
    else:
        found = draw(st.lists(st.integers(0, 51), min_size=naturals, max_size=naturals))
    if found and draw(st.integers(0, 4)) == 0:  # one wrong card now and then
        found[draw(st.integers(0, len(found) - 1))] = draw(st.integers(0, 51))
    cards = [*found, *[JOKER] * jokers]
    return rng.sample(cards, len(cards))


def check_readings_against_oracle(meld: list[int], params: MeldRules) -> None:
    """The readings of ``meld`` are exactly the oracle's assignments, each one well formed."""
    rules = params.rules()
    found = readings(meld, rules)
    expected = oracle_assignments(meld, params.ace, params.run_max, params.set_max)
    got = [tuple(sorted(r.joker_cards())) for r in found]
    assert bool(found) == bool(expected), (cards_str(meld), params)
    assert set(got) == expected, (cards_str(meld), params)
    assert len(got) == len(set(got)), "a reading is listed twice"
    values = card_values(rules.point_values)
    for reading in found:
        assert Counter(reading.cards) == Counter(meld)
        assert len(reading.stands_for) == len(reading.cards)
        for shown, stands in zip(reading.cards, reading.stands_for, strict=True):
            assert stands != JOKER
            if shown != JOKER:
                assert stands == shown
        assert natural_meld(reading.stands_for, params.ace, params.run_max, params.set_max)
        assert reading.value == sum(values[c] for c in reading.stands_for)
        if reading.kind == "set":
            assert len({rank(c) for c in reading.stands_for}) == 1
            naturals = [c for c in reading.cards if c != JOKER]
            assert list(reading.cards) == [
                *sorted(naturals),
                *[JOKER] * (len(meld) - len(naturals)),
            ]
        else:
            assert reading.kind == "run"
            stands = reading.stands_for
            for a, b in pairwise(stands):
                assert rank(b) == rank(a) % 13 + 1  # consecutive, K to A only when wrapping
            if params.ace == "low":
                assert [rank(c) for c in stands] == sorted(rank(c) for c in stands)
            elif len(stands) < 13:
                # a wrapped run is shown from the card after its gap
                assert (rank(stands[0]) - 2) % 13 + 1 not in {rank(c) for c in stands}
    if found:
        assert found[0].value == max(r.value for r in found)
        best = best_reading(meld, rules)
        assert best is not None and best.cards == found[0].cards


@settings(max_examples=300, deadline=None)
@given(candidate_melds(), meld_rules)
def test_meld_readings_match_the_brute_force_oracle(meld: list[int], params: MeldRules) -> None:
    """A meld is valid iff some joker assignment makes a valid natural meld; every reading is a
    legal assignment and every legal assignment is a reading (joker identities as multisets)."""
    check_readings_against_oracle(meld, params)


@settings(max_examples=150, deadline=None)
@given(candidate_melds(min_size=9, max_size=15), meld_rules)
def test_long_runs_match_the_brute_force_oracle(meld: list[int], params: MeldRules) -> None:
    """The same for long groups: runs of 9-13 cards, and 14-15 cards that must repeat a rank."""
    check_readings_against_oracle(meld, params)


EDGE_MELDS = [
    "5H JK JK JK JK",
    "AH JK JK JK JK",
    "KH JK JK JK JK",
    "9S JK JK JK",
    "9S 9H JK JK",
    "AS 2S 3S 4S 5S 6S 7S 8S 9S 10S JS QS KS",
    "AS 2S 3S 4S 5S 6S 7S 8S 9S 10S JS QS JK",
    "AS 2S 3S 4S 5S 6S JK 8S 9S 10S JS QS KS",
    "AS 2S 3S 4S 5S 6S 7S 8S 9S 10S JS QS KS JK",
    "QS KS AS 2S 3S 4S 5S 6S 7S 8S 9S 10S",
    "KS JK JK AS",
    "KS JK 2S",
    "JK JK JK",
    "JK AD",
]


@pytest.mark.parametrize("ace", ["low", "wrap"])
@pytest.mark.parametrize("meld", EDGE_MELDS)
def test_edge_melds_match_the_oracle(meld: str, ace: str) -> None:
    """Joker-heavy and full-length melds, rare in random draws, against the oracle."""
    cards = [parse_card(t) for t in meld.split()]
    check_readings_against_oracle(cards, MeldRules(ace, 13, 4))
    check_readings_against_oracle(cards, MeldRules(ace, 5, 3))


@settings(max_examples=10, deadline=None)
@given(candidate_melds(min_size=3, max_size=6).filter(lambda m: m.count(JOKER) == 3), meld_rules)
def test_oracle_pruning_loses_nothing(meld: list[int], params: MeldRules) -> None:
    """The oracle's pruned search (a joker shares rank or suit with the first natural) finds the
    same assignments as the search over all 52 cards for each of three jokers."""
    full = oracle_assignments(meld, params.ace, params.run_max, params.set_max, prune=False)
    assert oracle_assignments(meld, params.ace, params.run_max, params.set_max) == full


def test_oracle_knows_the_rules() -> None:
    """The oracle itself agrees with RULES.md's own examples (so it can be trusted as a judge)."""

    def ok(text: str, ace: str = "low") -> bool:
        return natural_meld([parse_card(t) for t in text.split()], ace, 13, 4)

    assert ok("AH 2H 3H") and not ok("QH KH AH") and not ok("KH AH 2H")
    assert ok("QH KH AH 2H", "wrap") and ok("KH AH 2H", "wrap")
    assert ok("9S 9H 9D") and ok("9S 9H 9D 9C") and not ok("9S 9S 9H")
    assert not ok("3S 5S 6S 7S") and not ok("4C 5C")
    jokers = oracle_assignments([parse_card("9H"), JOKER, JOKER], "low", 13, 4)
    assert len(jokers) == 6  # three runs and three sets
    assert oracle_assignments([JOKER, JOKER, JOKER], "low", 13, 4) == set()


# ======================================================================= random tables and turns


@dataclass
class Turn:
    """A generated position: the table before, the hand, the layout after, what moved."""

    rules: RuleSet
    table: list[list[int]] = field(default_factory=list)
    layout: list[list[int]] = field(default_factory=list)
    played: list[int] = field(default_factory=list)
    to_hand: list[int] = field(default_factory=list)
    hand: list[int] = field(default_factory=list)
    used: Counter[int] = field(default_factory=Counter)  # table before + hand

    @property
    def changed(self) -> bool:
        """Whether some table meld is not in the layout as it was (a robbed table), over the
        whole turn: one block may split a run that another block's merge makes again, and
        with two decks the table is then what it was."""
        before = Counter(tuple(sorted(m)) for m in self.table)
        return bool(before - Counter(tuple(sorted(m)) for m in self.layout))

    def fits(self, cards: Sequence[int]) -> bool:
        """Whether ``cards`` can join the table/hand without exceeding the deck."""
        need = Counter(cards)
        for card, n in need.items():
            limit = self.rules.jokers if card == JOKER else 2
            if self.used[card] + n > limit:
                return False
        return True

    def add(
        self,
        before: list[list[int]],
        after: list[list[int]],
        played: Sequence[int] = (),
        to_hand: Sequence[int] = (),
    ) -> None:
        """Add one block of the turn if its cards fit in the deck."""
        cards = [c for meld in before for c in meld] + list(played)
        if not self.fits(cards):
            return
        self.used.update(cards)
        self.table.extend(before)
        self.layout.extend(after)
        self.played.extend(played)
        self.to_hand.extend(to_hand)


def run(suit_: int, low: int, high: int) -> list[int]:
    """The natural run of ``suit_`` from rank ``low`` to ``high`` (1..13, no wrap)."""
    return [suit_ * 13 + r - 1 for r in range(low, high + 1)]


def a_set(rank_: int, suits: Sequence[int]) -> list[int]:
    """The natural set of ``rank_`` in ``suits``."""
    return [s * 13 + rank_ - 1 for s in suits]


BLOCKS = (
    "keep",
    "new",
    "extend",
    "split_insert",
    "split",
    "merge",
    "rob_set",
    "set_add",
    "joker_reread",
    "joker_free",
    "joker_redeem",
)


@st.composite
def turns(draw: st.DrawFn, preset: str | None = None) -> Turn:
    """A random valid table and a legal play on it, built from blocks of known rearrangements:
    extend a run, split one with a duplicate card (004's blue 6), split or merge runs, rob the
    fourth card of a set into a run, complete a set, re-read or free a joker, redeem one."""
    name = preset or draw(st.sampled_from(["robbers", "robbers-classic", "rummikub"]))
    rules = rule_set(name)
    turn = Turn(rules)
    kinds = draw(st.lists(st.sampled_from(BLOCKS), min_size=1, max_size=7))
    rng = Random(draw(st.integers(0, 2**32 - 1)))  # the details of each block
    for kind in kinds:
        s = rng.randint(0, 3)
        if kind == "joker_redeem" and rules.joker_policy != "to_hand":
            kind = "joker_free"
        if kind == "keep":
            if rng.random() < 0.5:
                low = rng.randint(1, 11)
                meld = run(s, low, rng.randint(low + 2, min(13, low + 7)))
            else:
                suits = rng.sample(range(4), rng.randint(3, 4))
                meld = a_set(rng.randint(1, 13), suits)
            turn.add([meld], [meld])
        elif kind == "new":
            low = rng.randint(1, 11)
            meld = run(s, low, rng.randint(low + 2, min(13, low + 4)))
            if rng.random() < 0.5:
                meld[rng.randint(0, len(meld) - 1)] = JOKER
            turn.add([], [meld], played=meld)
        elif kind == "extend":
            low = rng.randint(2, 10)
            high = rng.randint(low + 2, 12)
            extra = low - 1 if rng.random() < 0.5 else high + 1
            turn.add(
                [run(s, low, high)],
                [run(s, min(low, extra), max(high, extra))],
                [extra + s * 13 - 1],
            )
        elif kind == "split_insert":
            low = rng.randint(1, 9)
            high = rng.randint(low + 4, 13)
            mid = rng.randint(low + 2, high - 2)
            after = [run(s, low, mid), run(s, mid, high)]
            turn.add([run(s, low, high)], after, [s * 13 + mid - 1])
        elif kind == "split":
            low = rng.randint(1, 8)
            high = rng.randint(low + 5, 13)
            cut = rng.randint(low + 3, high - 2)
            turn.add([run(s, low, high)], [run(s, low, cut - 1), run(s, cut, high)])
        elif kind == "merge":
            low = rng.randint(1, 8)
            high = rng.randint(low + 5, 13)
            cut = rng.randint(low + 3, high - 2)
            turn.add([run(s, low, cut - 1), run(s, cut, high)], [run(s, low, high)])
        elif kind == "rob_set":
            r = rng.randint(1, 10)
            others = [x for x in range(4) if x != s]
            table = [a_set(r, range(4)), run(s, r + 1, r + 3)]
            turn.add(table, [a_set(r, others), run(s, r, r + 3)])
        elif kind == "set_add":
            r = rng.randint(1, 13)
            others = [x for x in range(4) if x != s]
            turn.add([a_set(r, others)], [a_set(r, range(4))], [s * 13 + r - 1])
        elif kind == "joker_reread":
            low = rng.randint(2, 9)  # [low, low+1, JK] + low+2 -> [low .. low+2, JK]
            table = [[*run(s, low, low + 1), JOKER]]
            turn.add(table, [[*run(s, low, low + 2), JOKER]], [s * 13 + low + 1])
        elif kind == "joker_free":
            r = rng.randint(1, 13)
            others = [x for x in range(4) if x != s]
            low = rng.randint(1, 11)
            t = rng.randint(0, 3)
            new_run = [JOKER, *run(t, low, low + 1)]
            played = [s * 13 + r - 1, *run(t, low, low + 1)]
            turn.add(
                [[*a_set(r, others[:2]), JOKER]], [a_set(r, [*others[:2], s]), new_run], played
            )
        else:  # joker_redeem: [low, JK, low+2] + low+1 natural; the joker goes to the hand
            low = rng.randint(1, 11)
            table = [[s * 13 + low - 1, JOKER, s * 13 + low + 1]]
            turn.add(table, [run(s, low, low + 2)], [s * 13 + low], [JOKER])
    if not turn.played:
        r = rng.randint(1, 13)
        turn.add([], [a_set(r, [0, 1, 2])], a_set(r, [0, 1, 2]))
        turn.add([], [a_set(r, [1, 2, 3])], a_set(r, [1, 2, 3]))
    assume(turn.played)
    extras = [rng.randint(0, 52) for _ in range(rng.randint(0, 5))]
    turn.hand = list(turn.played)
    for card in extras:
        if turn.fits([card]):
            turn.used[card] += 1
            turn.hand.append(card)
    rng.shuffle(turn.hand)
    turn.table = shuffled_melds(rng, turn.table)
    turn.layout = shuffled_melds(rng, turn.layout)
    return turn


def shuffled_melds(rng: Random, melds: list[list[int]]) -> list[list[int]]:
    """The melds in a random order, each with its cards in a random order."""
    return rng.sample([rng.sample(meld, len(meld)) for meld in melds], len(melds))


def flat(melds: Sequence[Sequence[int]]) -> Counter[int]:
    """All cards of several melds as a multiset."""
    return Counter(c for meld in melds for c in meld)


def oracle_valid(meld: Sequence[int], rules: RuleSet) -> bool:
    """Validity by the oracle (for checking the generator itself)."""
    return bool(oracle_assignments(meld, rules.ace, rules.run_max, rules.set_max))


@settings(max_examples=300, deadline=None)
@given(turns())
def test_legal_rearrangements_are_legal_and_conserve_cards(turn: Turn) -> None:
    """A random valid table rearranged legally is judged legal, and ``played`` = after - before,
    ``to_hand`` = before - after as multisets, ``out`` iff the hand is then empty."""
    assert all(oracle_valid(m, turn.rules) for m in turn.table)  # the generator is sound
    assert all(oracle_valid(m, turn.rules) for m in turn.layout)
    verdict = judge_play(turn.rules, turn.table, turn.hand, True, turn.layout)
    assert verdict.legal, verdict.reason
    before, after = flat(turn.table), flat(turn.layout)
    # a joker redeemed by one block and played by another nets out, like any card
    gross_played, gross_to_hand = Counter(turn.played), Counter(turn.to_hand)
    assert Counter(verdict.played) == after - before == gross_played - gross_to_hand
    assert Counter(verdict.to_hand) == before - after == gross_to_hand - gross_played
    assert list(verdict.played) == sorted_cards(verdict.played)
    left = Counter(turn.hand) - Counter(verdict.played) + Counter(verdict.to_hand)
    assert verdict.out == (sum(left.values()) == 0)
    assert len(verdict.layout) == len(turn.layout)
    for shown, given_meld in zip(verdict.layout, turn.layout, strict=True):
        assert Counter(shown) == Counter(given_meld)  # kept in order, never merged or split


@settings(max_examples=200, deadline=None)
@given(turns(), st.data())
def test_dropping_a_table_card_is_always_refused(turn: Turn, data: st.DataObject) -> None:
    """Taking any natural table card out of a legal layout is refused as ``table_card_missing``,
    naming that card."""
    before, after = flat(turn.table), flat(turn.layout)
    kept = sorted(c for c in before if c != JOKER and after[c] == before[c])
    assume(kept)
    card = data.draw(st.sampled_from(kept))
    layout = [list(m) for m in turn.layout]
    meld = next(m for m in layout if card in m)
    meld.remove(card)
    verdict = judge_play(turn.rules, turn.table, turn.hand, True, layout)
    assert verdict.code == "table_card_missing"
    assert verdict.reason is not None and card_str(card) in verdict.reason


@settings(max_examples=200, deadline=None)
@given(turns(), st.data())
def test_a_card_beyond_the_hand_is_always_refused(turn: Turn, data: st.DataObject) -> None:
    """Adding to a legal layout a card the hand does not hold (copies counted) is refused as
    ``card_not_in_hand``."""
    before, after, hand = flat(turn.table), flat(turn.layout), Counter(turn.hand)
    spare = [c for c in range(53) if after[c] - before[c] >= hand[c]]
    card = data.draw(st.sampled_from(spare))
    layout = [list(m) for m in turn.layout]
    layout[data.draw(st.integers(0, len(layout) - 1))].append(card)
    verdict = judge_play(turn.rules, turn.table, turn.hand, True, layout)
    assert verdict.code == "card_not_in_hand"
    assert verdict.reason is not None and card_str(card) in verdict.reason


@settings(max_examples=200, deadline=None)
@given(turns(preset="robbers"))
def test_before_opening_only_new_melds_count(turn: Turn) -> None:
    """Before opening, any change to a table meld is refused; otherwise the new melds' best
    readings are the points, and they open iff they reach the threshold."""
    verdict = judge_play(turn.rules, turn.table, turn.hand, False, turn.layout)
    if turn.changed:
        assert verdict.code == "table_touched_before_opening"
        return
    new = Counter(map(tuple, map(sorted, turn.layout))) - Counter(
        map(tuple, map(sorted, turn.table))
    )
    value = 0
    for meld, n in new.items():
        reading = best_reading(meld, turn.rules)
        assert reading is not None
        value += n * reading.value
    if value >= turn.rules.opening_points:
        assert verdict.legal and verdict.opening and verdict.points == value
    else:
        assert verdict.code == "opening_too_low"
        assert verdict.reason is not None and str(value) in verdict.reason


# ======================================================================= order of input cards


@st.composite
def maybe_broken_turns(draw: st.DrawFn) -> tuple[Turn, bool]:
    """A generated turn, sometimes broken: a card dropped, added, or moved between melds."""
    turn = draw(turns())
    opened = draw(st.booleans())
    how = draw(st.sampled_from(["none", "none", "drop", "add", "move"]))
    layout = [list(m) for m in turn.layout]
    if how == "drop":
        meld = layout[draw(st.integers(0, len(layout) - 1))]
        meld.pop(draw(st.integers(0, len(meld) - 1)))
    elif how == "add":
        layout[draw(st.integers(0, len(layout) - 1))].append(draw(st.integers(0, 52)))
    elif how == "move" and len(layout) > 1:
        source = layout[draw(st.integers(0, len(layout) - 1))]
        card = source.pop(draw(st.integers(0, len(source) - 1)))
        layout[draw(st.integers(0, len(layout) - 1))].append(card)
    turn.layout = layout
    return turn, opened


@settings(max_examples=300, deadline=None)
@given(maybe_broken_turns(), st.data())
def test_order_of_cards_never_changes_a_verdict(
    position: tuple[Turn, bool], data: st.DataObject
) -> None:
    """Shuffling the cards inside melds, the hand and the table's melds gives the same verdict;
    shuffling the layout's melds gives the same legality with the layout permuted alike."""
    turn, opened = position
    verdict = judge_play(turn.rules, turn.table, turn.hand, opened, turn.layout)
    rng = Random(data.draw(st.integers(0, 2**32 - 1)))
    table = shuffled_melds(rng, turn.table)
    hand = rng.sample(turn.hand, len(turn.hand))
    inside = [rng.sample(meld, len(meld)) for meld in turn.layout]
    same = judge_play(turn.rules, table, hand, opened, inside)
    if opened:
        assert same == verdict
    else:  # which changed table meld the reason names may follow the table's order
        assert replace(same, reason=None) == replace(verdict, reason=None)
    order = rng.sample(range(len(turn.layout)), len(turn.layout))
    moved = judge_play(turn.rules, turn.table, turn.hand, opened, [turn.layout[i] for i in order])
    assert moved.legal == verdict.legal
    if verdict.legal:
        assert moved.layout == tuple(verdict.layout[i] for i in order)
        assert replace(moved, layout=verdict.layout) == verdict


@settings(max_examples=200, deadline=None)
@given(candidate_melds(), meld_rules, st.data())
def test_order_of_cards_never_changes_a_meld(
    meld: list[int], params: MeldRules, data: st.DataObject
) -> None:
    """The readings of a meld do not depend on the order of its cards."""
    rules = params.rules()
    other = Random(data.draw(st.integers(0, 2**32 - 1))).sample(meld, len(meld))
    assert readings(other, rules) == readings(meld, rules)


# ======================================================================= print and parse

RANK_SPELLINGS = {1: ["A", "1"], 11: ["J", "11"], 12: ["Q", "12"], 13: ["K", "13"]}
SUIT_SPELLINGS = [["S", "♠", "♤"], ["H", "♥", "♡"], ["D", "♦", "♢"], ["C", "♣", "♧"]]


@given(st.integers(0, 52), st.data())
def test_every_spelling_of_a_card_parses_to_it(card: int, data: st.DataObject) -> None:
    """Any accepted spelling (1/11/12/13, suit symbols, lower case, spaces) parses to the card,
    and the card prints canonically and parses back to itself."""
    assert parse_card(card_str(card)) == card
    if card == JOKER:
        spelling = data.draw(st.sampled_from(["JK", "jk", "Jk", " JK ", "joker", "JOKER"]))
    else:
        r = rank(card)
        rank_text = data.draw(st.sampled_from(RANK_SPELLINGS.get(r, [str(r)])))
        suit_text = data.draw(st.sampled_from(SUIT_SPELLINGS[suit(card)]))
        spelling = rank_text + suit_text
        if data.draw(st.booleans()):
            spelling = spelling.lower()
        if data.draw(st.booleans()):
            spelling = f"  {spelling} "
    assert parse_card(spelling) == card
    assert card_str(parse_card(spelling)) == card_str(card)


@given(st.lists(st.integers(0, 52), max_size=20))
def test_loose_cards_round_trip(cards: list[int]) -> None:
    """Loose cards print in canonical order (suit, rank, jokers last) and parse back."""
    text = cards_str(sorted_cards(cards))
    assert [parse_card(t) for t in text] == sorted(cards)
    assert cards_str(sorted_cards(parse_card(t) for t in text)) == text


@settings(max_examples=150, deadline=None)
@given(candidate_melds(min_size=3), meld_rules, st.data())
def test_canonical_meld_round_trips(
    meld: list[int], params: MeldRules, data: st.DataObject
) -> None:
    """A valid meld's canonical form parses back to itself and is its own canonical form, also
    through ``judge()`` fed its own output."""
    rules = params.rules()
    best = best_reading(meld, rules)
    assume(best is not None)
    assert best is not None
    text = cards_str(best.cards)
    assert tuple(parse_card(t) for t in text) == best.cards
    again = best_reading([parse_card(t) for t in text], rules)
    assert again is not None and again.cards == best.cards
    options = {"ace": params.ace, "run_max": params.run_max, "set_max": params.set_max, "jokers": 8}
    mixed = Random(data.draw(st.integers(0, 2**32 - 1))).sample(text, len(text))
    first = judge({"rules": "robbers", "options": options, "meld": mixed})
    second = judge({"rules": "robbers", "options": options, "meld": first["cards"]})
    assert first["cards"] == text
    assert second == first


@settings(max_examples=150, deadline=None)
@given(turns())
def test_canonical_layout_round_trips_through_judge(turn: Turn) -> None:
    """``judge()``'s canonical layout, fed back as the layout, gives the same answer."""
    doc: dict[str, Any] = {
        "rules": turn.rules.name,
        "opened": True,
        "table": [cards_str(m) for m in turn.table],
        "hand": cards_str(turn.hand),
        "layout": [cards_str(m) for m in turn.layout],
    }
    first = judge(doc)
    assert first["legal"] is True
    second = judge({**doc, "layout": first["layout"]})
    assert second == first
    for meld in first["layout"]:
        best = best_reading([parse_card(t) for t in meld], turn.rules)
        assert best is not None and cards_str(best.cards) == meld
