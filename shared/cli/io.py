"""Shared plumbing of the JSON-in, JSON-out commands (`rummy judge`, `rummy score`, ...).

A document that is not a position at all is an ``InputError``: the command prints its message on
stderr and exits 2. Any verdict, legal or not, is a normal answer on stdout with exit 0.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from shared.core.cards import JOKER, CardError, card_str, excess_copies, parse_cards
from shared.core.rulesets import RuleSet, RuleSetError, rule_set

EXIT_BAD_INPUT = 2


class InputError(ValueError):
    """The input is not a well-formed document for this command; the message says what is wrong."""


def read_document(text: str) -> dict[str, Any]:
    """Parse a JSON object or raise ``InputError``."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"input is not JSON: {err}") from None
    if not isinstance(doc, dict):
        raise InputError(f"input must be a JSON object, got {type(doc).__name__}")
    return doc


def rules_of(doc: dict[str, Any]) -> RuleSet:
    """The rule set named by ``rules`` with ``options`` applied."""
    if "rules" not in doc:
        raise InputError("missing field 'rules' (one of 'robbers', 'robbers-classic', 'rummikub')")
    options = doc.get("options")
    try:
        return rule_set(doc["rules"], {} if options is None else options)
    except RuleSetError as err:
        raise InputError(str(err)) from None


def cards_field(doc: dict[str, Any], field: str) -> list[int]:
    """A list of cards under ``field``."""
    if field not in doc:
        raise InputError(f'missing field {field!r} (a list of cards such as ["5H", "JK"])')
    try:
        return parse_cards(doc[field], field)
    except CardError as err:
        raise InputError(str(err)) from None


def melds_field(doc: dict[str, Any], field: str) -> list[list[int]]:
    """A list of melds (lists of cards) under ``field``."""
    if field not in doc:
        raise InputError(f"missing field {field!r} (a list of melds, each a list of cards)")
    value = doc[field]
    if not isinstance(value, list):
        raise InputError(f"{field} must be a list of melds, got {type(value).__name__}")
    try:
        return [parse_cards(meld, f"{field}[{i}]") for i, meld in enumerate(value)]
    except CardError as err:
        raise InputError(str(err)) from None


def check_deck(rules: RuleSet, cards: list[int], where: str) -> None:
    """Refuse more copies of a card (or more jokers) than the rule set's deck holds."""
    excess = excess_copies(cards, rules.jokers)
    if excess is not None:
        card, n = excess
        limit = rules.jokers if card == JOKER else 2
        raise InputError(
            f"{where} hold {n} x {card_str(card)}, but the {rules.name} deck has {limit}"
        )


def run_json_command(handler: Callable[[dict[str, Any]], dict[str, Any]], name: str) -> int:
    """Read stdin, answer on stdout; exit 2 with a message on stderr for malformed input."""
    try:
        answer = handler(read_document(sys.stdin.read()))
    except InputError as err:
        print(f"rummy {name}: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(json.dumps(answer))
    return 0
