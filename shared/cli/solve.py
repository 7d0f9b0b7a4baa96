"""`rummy solve`: the best play for a position, or whether cards can be arranged (JSON in, out).

Input as for `rummy judge` without ``layout``: ``rules``, ``options``, ``table``, ``hand``,
``opened``, plus ``goal`` (``cards``, ``points``, ``opening`` or ``arrange``) and
``min_disruption``. ``arrange`` takes ``cards`` instead of the table and the hand.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from shared.cli.io import (
    InputError,
    cards_field,
    check_deck,
    melds_field,
    rules_of,
    run_json_command,
)
from shared.core.cards import cards_str, sorted_cards
from shared.core.melds import readings, why_not_meld
from shared.solver import GOALS, arrange, solve


def _flag(doc: dict[str, Any], field: str) -> bool:
    value = doc.get(field, False)
    if not isinstance(value, bool):
        raise InputError(f"{field} must be true or false, got {value!r}")
    return value


def solve_document(doc: dict[str, Any]) -> dict[str, Any]:
    """Answer one `rummy solve` document."""
    rules = rules_of(doc)
    goal = doc.get("goal", "cards")
    if goal not in GOALS:
        raise InputError(f"goal is {goal!r}; allowed: {', '.join(GOALS)}")
    min_disruption = _flag(doc, "min_disruption")
    started = time.perf_counter()
    if goal == "arrange":
        cards = cards_field(doc, "cards")
        check_deck(rules, cards, "the cards")
        found = arrange(rules, cards)
        return {
            "arrangeable": found.arrangeable,
            "layout": [cards_str(m) for m in found.layout],
            "free_jokers": found.free_jokers,
            "seconds": round(time.perf_counter() - started, 6),
        }
    table = melds_field(doc, "table")
    hand = cards_field(doc, "hand")
    opened = _flag(doc, "opened")
    check_deck(rules, [c for meld in table for c in meld] + hand, "the table and the hand")
    for i, meld in enumerate(table):
        if not readings(meld, rules):
            raise InputError(f"table[{i}] is not a valid meld: {why_not_meld(meld, rules)}")
    play = solve(rules, table, hand, opened, goal, min_disruption)
    return {
        "layout": [cards_str(m) for m in play.layout],
        "played": cards_str(sorted_cards(play.played)),
        "to_hand": cards_str(sorted_cards(play.to_hand)),
        "points": play.points,
        "seconds": round(time.perf_counter() - started, 6),
    }


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rummy solve`."""
    sub.add_parser(
        "solve",
        help="the best play for a position, or whether cards can be arranged (JSON in/out)",
        description="Reads a position as for `rummy judge` (without 'layout') plus 'goal' "
        "(cards, points, opening or arrange) and 'min_disruption' as JSON on stdin; prints "
        "the play (layout, played, to_hand, points, seconds). Exit 2 on malformed input.",
    )


def run(args: argparse.Namespace) -> int:
    """Answer one document from stdin."""
    return run_json_command(solve_document, "solve")
