"""The judgement of one play: given the table before, the hand, whether the seat has opened and
the proposed table after, is the play legal, and if not, why.

Everything is judged on multisets (RULES.md, "What every turn must satisfy" and Decision 4):
``played`` = table after minus table before (the cards that came from the hand) and
``to_hand`` = table before minus table after (only a redeemed joker may be there). A rejection
carries a stable code (listed in ``REJECTION_CODES``) and a sentence naming the meld or card.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from shared.core.cards import JOKER, card_str
from shared.core.melds import (
    MIN_MELD,
    Reading,
    card_values,
    meld_str,
    reading_cache,
    readings,
    why_not_meld,
)
from shared.core.melds import (
    joker_candidates as joker_stands_for,
)
from shared.core.rulesets import RuleSet

Meld = Sequence[int]

REJECTION_CODES: dict[str, str] = {
    "table_card_missing": "a card that was on the table is not in the new layout",
    "card_not_in_hand": "the layout holds a card that is neither on the table nor in the hand",
    "no_card_played": "a play must move at least one card from the hand to the table",
    "meld_too_small": "a meld in the layout has fewer than three cards",
    "invalid_meld": "a meld in the layout is neither a set nor a run",
    "table_touched_before_opening": "before opening, the table's melds must stay as they are",
    "opening_too_low": "the opening melds do not reach the rule set's opening points",
    "joker_left_table": "a joker left the table under a rule set where jokers stay on it",
    "joker_not_redeemed": "a joker left the table without its natural card being played",
}


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of judging one play."""

    legal: bool
    code: str | None = None
    reason: str | None = None
    played: tuple[int, ...] = ()
    to_hand: tuple[int, ...] = ()
    points: int | None = None
    layout: tuple[tuple[int, ...], ...] = ()  # canonical melds, in the order given
    opening: bool = False  # this play is the seat's opening
    out: bool = False  # the hand is empty after the play
    redeemed: int = 0  # table jokers redeemed with their natural card (kept or replayed)


def _reject(code: str, reason: str, played: list[int], to_hand: list[int]) -> Verdict:
    return Verdict(False, code, reason, tuple(played), tuple(to_hand))


def judge_play(
    rules: RuleSet,
    table: Sequence[Meld],
    hand: Sequence[int],
    opened: bool,
    layout: Sequence[Meld],
) -> Verdict:
    """Judge replacing ``table`` by ``layout`` with cards from ``hand``.

    ``table`` is trusted to be valid (the engine only ever stores valid tables); ``layout`` and
    the hand's relation to it are what is judged. Melds that stand unchanged in the layout cancel
    out first, so the cost follows the size of the change, not the size of the table.
    """
    layout_keys = [tuple(sorted(meld)) for meld in layout]
    kept: dict[tuple[int, ...], int] = {}
    for meld in table:
        key = tuple(sorted(meld))
        kept[key] = kept.get(key, 0) + 1
    changed: list[int] = []  # positions in the layout of melds that are not unchanged table melds
    for index, key in enumerate(layout_keys):
        left = kept.get(key, 0)
        if left:
            kept[key] = left - 1
        else:
            changed.append(index)
    removed = [key for key, left in kept.items() for _ in range(left)]  # table melds now gone

    diff: dict[int, int] = {}
    for index in changed:
        for card in layout_keys[index]:
            diff[card] = diff.get(card, 0) + 1
    for key in removed:
        for card in key:
            diff[card] = diff.get(card, 0) - 1
    played = sorted(card for card, n in diff.items() for _ in range(n))
    to_hand = sorted(card for card, n in diff.items() for _ in range(-n))

    missing = [c for c in to_hand if c != JOKER]
    if missing:
        return _reject(
            "table_card_missing",
            f"card {card_str(missing[0])} was on the table and is not in the layout; "
            "cards on the table stay on the table",
            played,
            to_hand,
        )
    if not played:
        return _reject(
            "no_card_played",
            "no card came from the hand; a play must move at least one card to the table",
            played,
            to_hand,
        )
    for card in set(played):
        held = hand.count(card)
        if diff[card] > held:
            return _reject(
                "card_not_in_hand",
                f"card {card_str(card)} is played {diff[card]} time(s) but the hand holds {held}",
                played,
                to_hand,
            )

    cache = reading_cache(rules)
    best: list[Reading] = []
    for index, key in enumerate(layout_keys):
        found = cache.get(key)
        if found is None:
            found = readings(key, rules)
        if not found:
            meld = layout[index]
            code = "meld_too_small" if len(meld) < MIN_MELD else "invalid_meld"
            return _reject(code, f"meld {index + 1} {why_not_meld(meld, rules)}", played, to_hand)
        best.append(found[0])
    canonical = tuple(r.cards for r in best)
    has_points = rules.point_values != "none"
    values = card_values(rules.point_values)
    out = len(hand) - len(played) + len(to_hand) == 0

    if not opened and rules.opening_points > 0:
        if removed:
            return _reject(
                "table_touched_before_opening",
                f"the table meld {meld_str(removed[0])} was changed; before opening a seat plays "
                "from its hand only and leaves the table as it is",
                played,
                to_hand,
            )
        new_value = sum(best[i].value for i in changed)
        if new_value < rules.opening_points:
            return _reject(
                "opening_too_low",
                f"the opening melds are worth {new_value} points; {rules.name} needs at least "
                f"{rules.opening_points} from the hand",
                played,
                to_hand,
            )
        points = new_value if has_points else None
        return Verdict(True, None, None, tuple(played), (), points, canonical, True, out)

    if to_hand:  # only jokers remain in to_hand here
        if rules.joker_policy != "to_hand":
            return _reject(
                "joker_left_table",
                f"{len(to_hand)} joker(s) left the table; under joker policy "
                f"'{rules.joker_policy}' a joker stays on the table (it may be re-read or "
                "moved to another meld)",
                played,
                to_hand,
            )
        naturals = [c for c in played if c != JOKER]
        if not redeemable(rules, table, naturals, len(to_hand)):
            return _reject(
                "joker_not_redeemed",
                f"{len(to_hand)} joker(s) left the table, but the natural card a joker stands "
                "for must be played from the hand to redeem it",
                played,
                to_hand,
            )
    points = None
    if has_points:
        # A played joker counts as the card it stands for in a changed meld (the highest such).
        points = sum(values[c] for c in played if c != JOKER)
        new_jokers = played.count(JOKER)
        if new_jokers:
            stood_for = sorted(
                (values[c] for i in changed for c in best[i].joker_cards()), reverse=True
            )
            points += sum(stood_for[:new_jokers])
    redeemed = _redemptions(rules, removed, [layout_keys[i] for i in changed], played)
    return Verdict(
        True,
        None,
        None,
        tuple(played),
        tuple(to_hand),
        points,
        canonical,
        False,
        out,
        max(redeemed, len(to_hand)),
    )


def _redemptions(
    rules: RuleSet,
    removed: list[tuple[int, ...]],
    changed: list[tuple[int, ...]],
    played: list[int],
) -> int:
    """How many table jokers were swapped for their natural card (Decision 9 counts them, kept
    or replayed): a changed table meld M with a joker, whose swap M - joker + X (X a played
    natural the joker stands for) now stands on the table. Jokers taken to the hand are counted
    by the caller even when the meld was rearranged further."""
    pool: dict[int, int] = {}
    for card in played:
        if card != JOKER:
            pool[card] = pool.get(card, 0) + 1
    after: dict[tuple[int, ...], int] = {}
    for key in changed:
        after[key] = after.get(key, 0) + 1
    swaps: list[list[tuple[int, tuple[int, ...]]]] = []  # per joker meld: (card, swapped meld)
    for meld in removed:
        if JOKER not in meld:
            continue
        without = list(meld)
        without.remove(JOKER)
        options = [(c, tuple(sorted([*without, c]))) for c in joker_stands_for(meld, rules)]
        swaps.append([(c, key) for c, key in options if pool.get(c, 0) and after.get(key, 0)])
    return _most_swaps(swaps, pool, after, 0)


def _most_swaps(
    swaps: list[list[tuple[int, tuple[int, ...]]]],
    pool: dict[int, int],
    after: dict[tuple[int, ...], int],
    index: int,
) -> int:
    """The largest number of swaps from ``swaps[index:]`` that fit together (a greedy pick would
    depend on the order of the table's melds). A function of its own, not a closure: a closure
    that calls itself is a reference cycle, freed only by the cyclic collector."""
    if index == len(swaps):
        return 0
    found = _most_swaps(swaps, pool, after, index + 1)
    for card, key in swaps[index]:
        if found == len(swaps) - index:
            break
        if pool[card] > 0 and after[key] > 0:
            pool[card] -= 1
            after[key] -= 1
            found = max(found, 1 + _most_swaps(swaps, pool, after, index + 1))
            pool[card] += 1
            after[key] += 1
    return found


def redeemable(rules: RuleSet, table: Sequence[Meld], naturals: list[int], jokers: int) -> bool:
    """Decision 4 (``to_hand``): can ``jokers`` table jokers each be matched to a distinct played
    natural card that the joker stands for in one legal reading of its meld before the turn?"""
    pool: dict[int, int] = {}
    for card in naturals:
        pool[card] = pool.get(card, 0) + 1
    options = [readings(meld, rules) for meld in table if JOKER in meld]
    return _matched(options, pool, 0, jokers)


def _matched(
    options: list[tuple[Reading, ...]], pool: dict[int, int], index: int, left: int
) -> bool:
    """Can ``left`` jokers of the melds ``options[index:]`` (their readings) each be matched to
    a distinct card of ``pool`` it stands for? (A function, not a closure calling itself: that
    would be a reference cycle.)"""
    if left == 0:
        return True
    if index == len(options):
        return False
    if _matched(options, pool, index + 1, left):
        return True
    for reading in options[index]:
        stands = reading.joker_cards()
        for take in range(min(len(stands), left), 0, -1):
            for combo in combinations(stands, take):
                if all(pool.get(c, 0) > 0 for c in combo):
                    for c in combo:
                        pool[c] -= 1
                    ok = _matched(options, pool, index + 1, left - take)
                    for c in combo:
                        pool[c] += 1
                    if ok:
                        return True
    return False
