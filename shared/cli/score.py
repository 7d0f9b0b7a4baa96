"""`rummy score`: the hands left at the end of a round in, the score sheet out (a public contract).

Seats are named; their order in ``hands`` is the turn order. Everything that cannot be the end of
a real round (a seat out with cards in hand, an unknown name, a card the deck does not have
enough of) is an ``InputError``: exit 2 with a message on stderr.
"""

from __future__ import annotations

import argparse
from typing import Any

from shared.cli.io import InputError, check_deck, rules_of, run_json_command
from shared.core.cards import CardError, cards_str, parse_cards
from shared.core.rulesets import RuleSet
from shared.core.scoring import ScoringError, score_round


def _hands(doc: dict[str, Any], rules: RuleSet) -> dict[str, list[int]]:
    """``hands``: seat name -> cards, in turn order, within the rule set's seat range."""
    if "hands" not in doc:
        raise InputError(
            'missing field \'hands\' (an object of seat name -> cards, e.g. {"ann": ["4S"], '
            '"bo": []}, in turn order)'
        )
    value = doc["hands"]
    if not isinstance(value, dict):
        raise InputError(
            f"hands must be an object of seat name -> cards, got {type(value).__name__}"
        )
    if not rules.min_players <= len(value) <= rules.max_players:
        raise InputError(
            f"hands names {len(value)} seats; allowed for {rules.name}: {rules.min_players} to "
            f"{rules.max_players} (options min_players / max_players change the range)"
        )
    hands = {}
    for name, cards in value.items():
        if not name:
            raise InputError("hands: a seat name cannot be empty")
        try:
            hands[name] = parse_cards(cards, f"hands[{name!r}]")
        except CardError as err:
            raise InputError(str(err)) from None
    check_deck(rules, [card for cards in hands.values() for card in cards], "the hands")
    return hands


def _seat(doc: dict[str, Any], field: str, names: list[str]) -> int | None:
    """The position of the seat named by ``field`` (``null`` or absent: ``None``)."""
    name = doc.get(field)
    if name is None:
        return None
    if not isinstance(name, str) or name not in names:
        raise InputError(
            f"{field} is {name!r}, which is not a seat in hands ({', '.join(map(repr, names))})"
        )
    return names.index(name)


def _redeemed(doc: dict[str, Any], names: list[str]) -> list[int]:
    """``redeemed``: seat name -> jokers that seat redeemed this round (absent seats: 0)."""
    value = doc.get("redeemed")
    if value is None:
        return [0] * len(names)
    if not isinstance(value, dict):
        raise InputError(
            f"redeemed must be an object of seat name -> count, got {type(value).__name__}"
        )
    for name, count in value.items():
        if name not in names:
            raise InputError(
                f"redeemed names {name!r}, which is not a seat in hands "
                f"({', '.join(map(repr, names))})"
            )
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InputError(
                f"redeemed[{name!r}] is {count!r}; allowed: a whole number of jokers, 0 or more"
            )
    return [value.get(name, 0) for name in names]


def score(doc: dict[str, Any]) -> dict[str, Any]:
    """The score sheet of one round: its winner and every seat's score (``null`` if unscored)."""
    rules = rules_of(doc)
    hands = _hands(doc, rules)
    names = list(hands)
    if "out" not in doc:
        raise InputError(
            "missing field 'out' (the seat that went out, or null for a stalled round)"
        )
    out = _seat(doc, "out", names)
    last = _seat(doc, "last_play", names)
    redeemed = _redeemed(doc, names)
    if out is not None and hands[names[out]]:
        left = hands[names[out]]
        raise InputError(
            f"out is {names[out]!r}, but that hand is not empty (it holds "
            f"{' '.join(cards_str(left))}); a seat goes out by emptying its hand"
        )
    for i, name in enumerate(names):
        if i != out and not hands[name]:
            if out is None:
                raise InputError(
                    f"out is null (a stalled round), but {name!r} has an empty hand: set out "
                    f"to {name!r}"
                )
            raise InputError(
                f"{name!r} has an empty hand too, but only {names[out]!r} went out; every "
                "other seat holds cards at the end of a round"
            )
    try:
        sheet = score_round(rules, list(hands.values()), out, redeemed, last)
    except ScoringError as err:  # every fact is checked above; kept as a safety net
        raise InputError(str(err)) from None
    return {
        "winner": names[sheet.winner],
        "scores": None if sheet.scores is None else dict(zip(names, sheet.scores, strict=True)),
    }


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rummy score`."""
    sub.add_parser(
        "score",
        help="score one round (JSON hands on stdin, score sheet on stdout)",
        description="Reads the rule set, the hands left at the end of a round, who went out "
        "(null for a stalled round) and optionally the jokers each seat redeemed and who made "
        "the last play, as JSON on stdin; prints the winner and every seat's score as JSON. "
        "Exit 2 when the input cannot be the end of a round.",
    )


def run(args: argparse.Namespace) -> int:
    """Score one document from stdin."""
    return run_json_command(score, "score")
