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

from shared.core.cards import CARD_KINDS, JOKER, card_str
from shared.core.melds import (
    MIN_MELD,
    Reading,
    card_values,
    meld_str,
    reading_cache,
    readings,
    why_not_meld,
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
    the hand's relation to it are what is judged.
    """
    before = [0] * CARD_KINDS
    for meld in table:
        for card in meld:
            before[card] += 1
    after = [0] * CARD_KINDS
    for meld in layout:
        for card in meld:
            after[card] += 1
    played: list[int] = []
    to_hand: list[int] = []
    for card in range(CARD_KINDS):
        diff = after[card] - before[card]
        if diff > 0:
            played.extend([card] * diff)
        elif diff < 0:
            to_hand.extend([card] * -diff)

    missing = [c for c in to_hand if c != JOKER]
    if missing:
        return _reject(
            "table_card_missing",
            f"card {card_str(missing[0])} was on the table and is not in the layout; "
            "cards on the table stay on the table",
            played,
            to_hand,
        )
    if played:
        in_hand = [0] * CARD_KINDS
        for card in hand:
            in_hand[card] += 1
        for card in set(played):
            if after[card] - before[card] > in_hand[card]:
                return _reject(
                    "card_not_in_hand",
                    f"card {card_str(card)} is played {after[card] - before[card]} time(s) but "
                    f"the hand holds {in_hand[card]}",
                    played,
                    to_hand,
                )
    else:
        return _reject(
            "no_card_played",
            "no card came from the hand; a play must move at least one card to the table",
            played,
            to_hand,
        )

    cache = reading_cache(rules)
    canonical: list[tuple[int, ...]] = []
    best: list[Reading] = []
    for index, meld in enumerate(layout):
        key = tuple(sorted(meld))
        found = cache.get(key)
        if found is None:
            found = readings(key, rules)
        if not found:
            code = "meld_too_small" if len(meld) < MIN_MELD else "invalid_meld"
            return _reject(code, f"meld {index + 1} {why_not_meld(meld, rules)}", played, to_hand)
        best.append(found[0])
        canonical.append(found[0].cards)

    has_points = rules.point_values != "none"
    opening = not opened and rules.opening_points > 0
    if opening:
        return _judge_opening(rules, table, layout, best, played, to_hand, hand, has_points)

    jokers_out = len(to_hand)  # only jokers remain in to_hand here
    if jokers_out:
        if rules.joker_policy != "to_hand":
            return _reject(
                "joker_left_table",
                f"{jokers_out} joker(s) left the table; under joker policy "
                f"'{rules.joker_policy}' a joker stays on the table (it may be re-read or "
                "moved to another meld)",
                played,
                to_hand,
            )
        if not _redeemable(rules, table, [c for c in played if c != JOKER], jokers_out):
            return _reject(
                "joker_not_redeemed",
                f"{jokers_out} joker(s) left the table, but the natural card a joker stands for "
                "must be played from the hand to redeem it",
                played,
                to_hand,
            )
    points = _played_points(rules, table, layout, best, played) if has_points else None
    return Verdict(
        True,
        played=tuple(played),
        to_hand=tuple(to_hand),
        points=points,
        layout=tuple(canonical),
        out=len(hand) - len(played) + len(to_hand) == 0,
    )


def _judge_opening(
    rules: RuleSet,
    table: Sequence[Meld],
    layout: Sequence[Meld],
    best: list[Reading],
    played: list[int],
    to_hand: list[int],
    hand: Sequence[int],
    has_points: bool,
) -> Verdict:
    """An opening: the table's melds stay exactly as they are, the new melds reach the points."""
    remaining: dict[tuple[int, ...], int] = {}
    for meld in table:
        key = tuple(sorted(meld))
        remaining[key] = remaining.get(key, 0) + 1
    new_value = 0
    for meld, reading in zip(layout, best, strict=True):
        key = tuple(sorted(meld))
        if remaining.get(key, 0) > 0:
            remaining[key] -= 1
        else:
            new_value += reading.value
    touched = [key for key, n in remaining.items() if n > 0]
    if touched or to_hand:
        which = meld_str(touched[0]) if touched else "a joker"
        return _reject(
            "table_touched_before_opening",
            f"the table meld {which} was changed; before opening a seat plays from its hand "
            "only and leaves the table as it is",
            played,
            to_hand,
        )
    if new_value < rules.opening_points:
        return _reject(
            "opening_too_low",
            f"the opening melds are worth {new_value} points; {rules.name} needs at least "
            f"{rules.opening_points} from the hand",
            played,
            to_hand,
        )
    return Verdict(
        True,
        played=tuple(played),
        points=new_value if has_points else None,
        layout=tuple(r.cards for r in best),
        opening=True,
        out=len(hand) == len(played),
    )


def _redeemable(rules: RuleSet, table: Sequence[Meld], naturals: list[int], jokers: int) -> bool:
    """Decision 4 (``to_hand``): can ``jokers`` table jokers each be matched to a distinct played
    natural card that the joker stands for in one legal reading of its meld before the turn?"""
    pool: dict[int, int] = {}
    for card in naturals:
        pool[card] = pool.get(card, 0) + 1
    options = [readings(meld, rules) for meld in table if JOKER in meld]

    def search(index: int, left: int) -> bool:
        if left == 0:
            return True
        if index == len(options):
            return False
        if search(index + 1, left):
            return True
        for reading in options[index]:
            stands = reading.joker_cards()
            for take in range(min(len(stands), left), 0, -1):
                for combo in combinations(stands, take):
                    if all(pool.get(c, 0) > 0 for c in combo):
                        for c in combo:
                            pool[c] -= 1
                        ok = search(index + 1, left - take)
                        for c in combo:
                            pool[c] += 1
                        if ok:
                            return True
        return False

    return search(0, jokers)


def _played_points(
    rules: RuleSet,
    table: Sequence[Meld],
    layout: Sequence[Meld],
    best: list[Reading],
    played: list[int],
) -> int:
    """Value of the played cards: naturals at their value; a played joker as the card it stands
    for in the new layout (where several jokers could be the played one, the highest)."""
    values = card_values(rules.point_values)
    points = sum(values[c] for c in played if c != JOKER)
    new_jokers = played.count(JOKER)
    if new_jokers:
        unchanged: dict[tuple[int, ...], int] = {}
        for meld in table:
            key = tuple(sorted(meld))
            unchanged[key] = unchanged.get(key, 0) + 1
        candidates: list[int] = []
        for meld, reading in zip(layout, best, strict=True):
            key = tuple(sorted(meld))
            if unchanged.get(key, 0) > 0:
                unchanged[key] -= 1
            else:
                candidates.extend(values[c] for c in reading.joker_cards())
        points += sum(sorted(candidates, reverse=True)[:new_jokers])
    return points
