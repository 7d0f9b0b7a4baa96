"""Dealing read backwards: ``RecordedShuffle`` answers with orders that give exactly the cuts,
deals and reshuffles a decision recorded, so deciding again from the record alone (no seed)
makes the same events; and what no shuffle could have made is not repeated."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from shared.core.cards import deck
from shared.core.codes import Rejection
from shared.core.commands import Command, Context, Continue, Sit, Start
from shared.core.dealing import RecordedShuffle
from shared.core.decide import decide
from shared.core.events import Event, RoundDealt, StarterChosen, StockReshuffled
from shared.core.evolve import evolve
from shared.core.state import GameState
from shared.play.bots import BOTS
from shared.play.selfplay import SelfPlay

SEED = bytes(range(32))


class _Twice(SelfPlay):
    """Self-play that decides every command a second time from its own recorded outcome."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.random_outcomes = 0
        self.disagreements: list[tuple[Command, list[Event], Any]] = []

    def apply(self, command: Command) -> list[Event] | Rejection:
        before = self.state
        decision = super().apply(command)
        if isinstance(decision, list):
            ctx = Context(self.now, self.seed, RecordedShuffle(decision))
            again = decide(before, command, ctx)
            if again != decision:
                self.disagreements.append((command, decision, again))
            kinds = (StarterChosen, RoundDealt, StockReshuffled)
            self.random_outcomes += sum(isinstance(e, kinds) for e in decision)
        return decision


@pytest.mark.parametrize(
    ("rules", "options", "seats"),
    [
        ("robbers", {"match_rounds": 3}, 3),
        ("robbers", {"discard_pile": True, "max_reshuffles": 2, "hand_size": 9}, 4),
        ("robbers-classic", {"discard_pile": True}, 5),
        ("rummikub", {"turn_seconds": None}, 4),
        ("vatikan", {"starter": "random", "match_rounds": 2}, 2),
    ],
)
def test_every_random_outcome_is_decided_again_from_its_record(
    rules: str, options: dict[str, Any], seats: int
) -> None:
    bots = [BOTS["random"]() for _ in range(seats)]
    player = _Twice(rules, options, bots, SEED, random.Random(7), check=False)
    report = player.play()
    assert report.finished
    assert player.random_outcomes >= 2  # the cut or pick and a deal at least
    assert player.disagreements == []


def _seated(seats: int = 3) -> GameState:
    """A robbers game with every seat taken, ready to start."""
    player = SelfPlay(
        "robbers", {}, [BOTS["random"]() for _ in range(seats)], SEED, random.Random(1)
    )
    player.apply(player.create)
    for seat in range(seats):
        player.apply(Sit(f"p{seat}", f"s{seat}"))
    return player.state


def _all_cards(dealt: RoundDealt) -> list[int]:
    return sorted([*dealt.stock, *dealt.discard, *(c for hand in dealt.hands for c in hand)])


def test_a_deal_that_is_not_one_deck_is_not_repeated() -> None:
    before = _seated()
    started = decide(before, Start(), Context(1.0, SEED))
    assert isinstance(started, list)
    dealt = next(e for e in started if isinstance(e, RoundDealt))
    doubled = replace(dealt, stock=(*dealt.stock[:-1], dealt.hands[0][0]))
    forged = [doubled if e is dealt else e for e in started]
    again = decide(before, Start(), Context(1.0, None, RecordedShuffle(forged)))
    assert isinstance(again, list)
    redealt = next(e for e in again if isinstance(e, RoundDealt))
    assert redealt != doubled
    assert _all_cards(redealt) == deck(before.rules.jokers) != _all_cards(doubled)


def test_a_recorded_shuffle_answers_only_with_a_shuffle_of_the_items() -> None:
    chosen = StarterChosen("cut", (((0, 5), (1, 200)),), 0, 1)  # 200 is no card
    shuffle = RecordedShuffle([chosen])
    cards = deck(4)
    assert shuffle.order(cards, "cut/1") == cards
    assert shuffle.order(cards, "cut/2") == cards  # no second cut recorded
    good = RecordedShuffle([StarterChosen("cut", (((0, 5), (1, 9)),), 1, 2)])
    order = good.order(cards, "cut/1")
    assert order[:2] == [5, 9] and sorted(order) == cards


def test_the_match_end_needs_a_seed_to_reveal() -> None:
    """With a recorded shuffle and no seed, the end of the match cannot reveal one: refused."""
    bots = [BOTS["random"]() for _ in range(2)]
    player = SelfPlay("robbers", {"match": "single"}, bots, SEED, random.Random(3), check=False)
    report = player.play()
    assert report.finished
    state = GameState()
    for event in report.events:
        if event.TYPE == "MatchEnded":
            break
        state = evolve(state, event)
    refused = decide(state, Continue(), Context(0.0, None, RecordedShuffle([])))
    assert isinstance(refused, Rejection) and refused.code == "bad_seed"
    ended = decide(state, Continue(), Context(0.0, SEED, RecordedShuffle([])))
    assert isinstance(ended, list) and ended[-1].TYPE == "SeedRevealed"
