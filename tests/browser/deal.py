"""A deal the browser test can play by hand: the pure engine predicts a seeded game's deal, and
the search picks the second player's own seed so that the deal holds a short scripted game.

The game: robbers, two seats, no opening minimum. The starter S holds a run of four (one suit)
and two more cards of the rank at one end of the run, in two other suits; the other seat O holds
a card that fits a meld once S has split the run. Turn 1: S tries an illegal meld (refused), takes
it back, and plays the run. Turn 2: O draws. Turn 3: S moves the run's end card to a new meld and
adds the two cards: a set. Turn 4: O adds its card to a meld.

The server's seed is fixed at creation (``--allow-seeded-games``), but the shuffle also mixes in
the game id (random) and the players' own seeds, so the search runs once the game exists: over
the seed the second player types when taking a seat.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.core.cards import card_str, make_card, rank_of, suit_of
from shared.core.commands import Command, Context, CreateGame, Sit, Start
from shared.core.decide import decide
from shared.core.events import RoundDealt
from shared.core.evolve import evolve
from shared.core.shuffle import commitment
from shared.core.state import GameState

SERVER_SEED = "5eed" * 8
OPTIONS = {"opening_points": 0, "match": "single", "turn_seconds": 300}


@dataclass(frozen=True)
class Plan:
    """What each seat does, in the API's card notation."""

    seed: str  # the second player's own seed
    starter: int  # seat S
    hands: tuple[tuple[str, ...], ...]
    run: tuple[str, ...]  # four cards of S, one suit, ascending
    end: str  # run[0] or run[-1]: moved to a new meld on turn 3
    pair: tuple[str, str]  # two cards of S of the end's rank, other suits
    extra: str  # O's card for turn 4
    extra_meld: int  # the meld (1-based) it joins after turn 3: 1 the run, 2 the set

    @property
    def other(self) -> int:
        return 1 - self.starter


def deal(game_id: str, seeds: tuple[str, str], rules: str = "robbers") -> RoundDealt:
    """The first deal of the game ``game_id`` with the players' ``seeds`` (the pure engine)."""
    server = bytes.fromhex(SERVER_SEED)
    state = GameState()
    commands: list[Command] = [
        CreateGame(game_id, rules, dict(OPTIONS), 2, commitment(server)),
        Sit("ann", seeds[0]),
        Sit("bo", seeds[1]),
    ]
    for command in commands:
        decided = decide(state, command)
        assert isinstance(decided, list), decided
        for event in decided:
            state = evolve(state, event)
    started = decide(state, Start(), Context(0.0, server))
    assert isinstance(started, list), started
    return next(e for e in started if isinstance(e, RoundDealt))


def _plan(dealt: RoundDealt, seed: str) -> Plan | None:
    s = dealt.starter
    mine, theirs = list(dealt.hands[s]), list(dealt.hands[1 - s])
    for suit in range(4):
        for low in range(1, 11):
            run = [make_card(rank, suit) for rank in range(low, low + 4)]
            if not all(card in mine for card in run):
                continue
            for end, rest in ((run[0], run[1:]), (run[-1], run[:-1])):
                others = sorted(
                    {c for c in mine if c < 52 and rank_of(c) == rank_of(end)} - set(run)
                )
                others = [c for c in others if suit_of(c) != suit]
                if len(others) < 2:
                    continue
                pair = others[:2]
                fourth = ({0, 1, 2, 3} - {suit, *(suit_of(c) for c in pair)}).pop()
                fits_set = [make_card(rank_of(end), fourth)]
                ranks = [rank_of(c) for c in rest]
                fits_run = [
                    make_card(r, suit) for r in (min(ranks) - 1, max(ranks) + 1) if 1 <= r <= 13
                ]
                for meld, fits in ((1, fits_run), (2, fits_set)):
                    found = next((c for c in fits if c in theirs), None)
                    if found is not None:
                        return Plan(
                            seed=seed,
                            starter=s,
                            hands=tuple(tuple(card_str(c) for c in h) for h in dealt.hands),
                            run=tuple(card_str(c) for c in run),
                            end=card_str(end),
                            pair=(card_str(pair[0]), card_str(pair[1])),
                            extra=card_str(found),
                            extra_meld=meld,
                        )
    return None


def find_plan(game_id: str, first_seed: str = "", tries: int = 20000) -> Plan:
    """The first seed ``bo-<n>`` for the second player that gives a deal for the script."""
    for n in range(tries):
        seed = f"bo-{n}"
        plan = _plan(deal(game_id, (first_seed, seed)), seed)
        if plan is not None:
            return plan
    raise AssertionError(f"no seed of {tries} gives a scripted deal for game {game_id}")
