"""`rummy judge`: one meld or one play in, one verdict out (a public contract: keep it stable)."""

from __future__ import annotations

import argparse
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
from shared.core.judgement import judge_play
from shared.core.melds import Reading, readings, why_not_meld
from shared.core.rulesets import RuleSet


def reading_json(reading: Reading, rules: RuleSet) -> dict[str, Any]:
    """A reading as JSON: kind, canonical cards, and what each joker (by position) stands for."""
    return {
        "kind": reading.kind,
        "cards": cards_str(reading.cards),
        "jokers": {str(i): cards_str([c])[0] for i, c in reading.joker_map().items()},
        "points": reading.value if rules.point_values != "none" else None,
    }


def judge_meld(doc: dict[str, Any], rules: RuleSet) -> dict[str, Any]:
    """Is ``meld`` a set or a run; its canonical reading first, then every legal reading."""
    meld = cards_field(doc, "meld")
    check_deck(rules, meld, "the meld's cards")
    found = readings(meld, rules)
    if not found:
        return {"valid": False, "reason": why_not_meld(meld, rules)}
    return {
        "valid": True,
        **reading_json(found[0], rules),
        "readings": [reading_json(r, rules) for r in found],
    }


def judge_turn(doc: dict[str, Any], rules: RuleSet) -> dict[str, Any]:
    """Is replacing ``table`` by ``layout`` a legal play from ``hand``."""
    table = melds_field(doc, "table")
    hand = cards_field(doc, "hand")
    layout = melds_field(doc, "layout")
    opened = doc.get("opened", False)
    if not isinstance(opened, bool):
        raise InputError(f"opened must be true or false, got {opened!r}")
    check_deck(rules, [c for meld in table for c in meld] + hand, "the table and the hand")
    for i, meld in enumerate(table):
        if not readings(meld, rules):
            raise InputError(f"table[{i}] is not a valid meld: {why_not_meld(meld, rules)}")
    verdict = judge_play(rules, table, hand, opened, layout)
    if not verdict.legal:
        return {"legal": False, "code": verdict.code, "reason": verdict.reason}
    return {
        "legal": True,
        "played": cards_str(sorted_cards(verdict.played)),
        "to_hand": cards_str(sorted_cards(verdict.to_hand)),
        "points": verdict.points,
        "layout": [cards_str(meld) for meld in verdict.layout],
        "opening": verdict.opening,
        "out": verdict.out,
    }


def judge(doc: dict[str, Any]) -> dict[str, Any]:
    """Dispatch on the document's shape: ``meld`` for one meld, ``layout`` for a play."""
    rules = rules_of(doc)
    if "meld" in doc:
        return judge_meld(doc, rules)
    if "layout" in doc:
        return judge_turn(doc, rules)
    raise InputError(
        "expected either 'meld' (a list of cards) or 'table', 'hand', 'opened' and 'layout'"
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rummy judge`."""
    sub.add_parser(
        "judge",
        help="judge one meld or one play (JSON on stdin, verdict on stdout)",
        description="Reads a meld, or a position and a proposed layout, as JSON on stdin; "
        "prints the verdict as JSON. Exit 2 when the input is not a position at all.",
    )


def run(args: argparse.Namespace) -> int:
    """Answer one document from stdin."""
    return run_json_command(judge, "judge")
