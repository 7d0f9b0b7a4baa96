"""Commands from JSON: malformed ones are refused naming the field, before any judgement."""

from __future__ import annotations

import pytest

from shared.core.commands import (
    MAX_LAYOUT_CARDS,
    MAX_MELD_CARDS,
    CommandError,
    Discard,
    Draw,
    Play,
    seat_command,
    sit_command,
)


def test_a_play_parses_its_layout_in_any_notation() -> None:
    command = seat_command("play", 1, {"layout": [["5h", "6♥", "7H"]]})
    assert isinstance(command, Play)
    assert command.seat == 1 and len(command.layout[0]) == 3


@pytest.mark.parametrize(
    ("kind", "body", "field"),
    [
        ("play", {"layout": "5H 6H 7H"}, "layout"),
        ("play", {"layout": [["5H", "XX", "7H"]]}, "layout"),
        ("play", {"layout": [["5H"] * (MAX_MELD_CARDS + 1)]}, "layout"),
        ("play", {"layout": [["5H", "6H", "7H"]] * 40}, "layout"),
        ("draw", {"source": "floor"}, "source"),
        ("discard", {"card": 7}, "card"),
        ("shuffle", {}, "type"),
    ],
)
def test_malformed_commands_name_the_field(kind: str, body: dict[str, object], field: str) -> None:
    with pytest.raises(CommandError) as err:
        seat_command(kind, 0, body)
    assert err.value.field == field


def test_a_layout_may_not_hold_more_cards_than_any_deck() -> None:
    melds = [["5H", "6H", "7H"]] * (MAX_LAYOUT_CARDS // 3 + 1)
    with pytest.raises(CommandError, match="at most"):
        seat_command("play", 0, {"layout": melds[:60]})


def test_draw_and_discard() -> None:
    assert seat_command("draw", 2, {}) == Draw(2, "stock")
    assert seat_command("discard", 2, {"card": "QS"}) == Discard(2, 11)


@pytest.mark.parametrize("body", [{}, {"name": ""}, {"name": "x" * 41}, {"name": "a", "seed": 5}])
def test_bad_names_and_seeds_are_refused(body: dict[str, object]) -> None:
    with pytest.raises(CommandError):
        sit_command(body)
