"""Pairing: Swiss by score then rating with no repeated meeting where it can be avoided, round
robins of tables (the circle method for two seats), byes and bot seats shared out fairly,
tables of 2 up to the rule set's maximum, and the same log always pairing the same round."""

from __future__ import annotations

import itertools
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from shared.core.rulesets import PRESETS
from shared.tournament.events import BOT
from shared.tournament.pairing import circle, pair, table_sizes
from shared.tournament.standings import meetings
from shared.tournament.state import Tournament, fold
from tests.tournament.desk import Desk, player


def repeats(state: Tournament) -> int:
    """Meetings beyond the first, over every pair of entrants."""
    return sum(n - 1 for n in meetings(state).values() if n > 1)


def humans(seats: tuple[str, ...]) -> list[str]:
    return [p for p in seats if not p.startswith(BOT)]


@pytest.mark.parametrize("n", [2, 4, 8, 10])
def test_the_circle_method_meets_every_pair_exactly_once(n: int) -> None:
    players = [f"p{i}" for i in range(n)]
    met: Counter[frozenset[str]] = Counter()
    for number in range(1, n):
        pairs = circle(players, number)
        assert sorted(p for pair_ in pairs for p in pair_) == sorted(players)
        met.update(frozenset(pair_) for pair_ in pairs)
    assert set(met) == {frozenset(c) for c in itertools.combinations(players, 2)}
    assert set(met.values()) == {1}


def test_a_round_robin_of_two_seats_plays_the_whole_circle() -> None:
    desk = Desk().open(8, format="round_robin", rounds=0)
    assert desk.state.rounds == 7
    rng = random.Random(3)
    for _ in range(7):
        desk.play_round(rng)
    assert set(meetings(desk.state).values()) == {1}
    assert len(meetings(desk.state)) == 28


def test_an_odd_round_robin_gives_each_entrant_one_bye() -> None:
    desk = Desk().open(7, format="round_robin", rounds=0)
    assert desk.state.rounds == 7
    rng = random.Random(4)
    for _ in range(7):
        desk.play_round(rng)
    byes = Counter(p for r in desk.state.played for p in r.byes)
    assert byes == {player(i): 1 for i in range(7)}
    assert set(meetings(desk.state).values()) == {1} and len(meetings(desk.state)) == 21


def test_an_odd_round_robin_with_a_bot_fill_seats_the_bot_instead_of_a_bye() -> None:
    desk = Desk().open(5, format="round_robin", rounds=0, fill="bots:patient")
    desk.play_round(random.Random(1))
    paired = desk.state.played[0]
    assert paired.byes == ()
    assert sum(t.seats.count("bot:patient") for t in paired.tables) == 1


@pytest.mark.parametrize(("n", "seats"), [(16, 4), (9, 3)])
def test_a_round_robin_of_tables_meets_every_pair_once_where_a_schedule_allows(
    n: int, seats: int
) -> None:
    desk = Desk().open(n, format="round_robin", rounds=0, seats=seats, rules="robbers")
    assert desk.state.rounds == (n - 1) // (seats - 1)
    rng = random.Random(5)
    for _ in range(desk.state.rounds):
        desk.play_round(rng)
    assert len(meetings(desk.state)) == n * (n - 1) // 2
    assert set(meetings(desk.state).values()) == {1}


def test_a_round_robin_of_tables_spreads_its_meetings_evenly() -> None:
    """12 entrants at tables of 3 meet 2 others a round: after the 6 rounds of the cycle each
    pair has met once or twice, never three times, and nobody has missed more than the numbers
    force."""
    desk = Desk().open(12, format="round_robin", rounds=0, seats=3, rules="robbers")
    rng = random.Random(6)
    for _ in range(desk.state.rounds):
        desk.play_round(rng)
    met = meetings(desk.state)
    assert max(met.values()) <= 2
    assert len(met) >= 60  # of the 66 pairs; 6 rounds x 4 tables x 3 pairs = 72 meetings


def test_round_one_of_a_swiss_seats_by_rating() -> None:
    ratings = [3.0, 9.0, 1.0, 7.0, 5.0, 8.0, 2.0, 6.0]
    desk = Desk().open(8, seats=4, ratings=ratings)
    tables = desk.pair()
    by_rating = sorted(range(8), key=lambda i: -ratings[i])
    assert set(tables[0].seats) == {player(i) for i in by_rating[:4]}
    assert set(tables[1].seats) == {player(i) for i in by_rating[4:]}


def test_a_swiss_seats_winners_with_winners() -> None:
    """Round 2: the four who won round 1 sit at the first two tables (no one meets again)."""
    desk = Desk().open(8, ratings=[8, 7, 6, 5, 4, 3, 2, 1])
    winners = []
    for table in desk.pair():
        low = table.seats[1]  # the lower rated wins each table
        winners.append(low)
        desk.finish_by(table, [low, table.seats[0]])
    second = desk.pair()
    assert {p for t in second[:2] for p in t.seats} == set(winners)
    assert repeats(desk.state) == 0


@pytest.mark.parametrize("seed", range(8))
def test_a_swiss_round_two_never_repeats_round_one(seed: int) -> None:
    """Round 2 is always possible without meeting again: whatever round 1 gave, nobody does."""
    rng = random.Random(seed)
    desk = Desk().open(16, seats=4, rules="robbers", ratings=[rng.random() for _ in range(16)])
    desk.play_round(rng)
    desk.play_round(rng)
    assert repeats(desk.state) == 0


def avoidable(state: Tournament, players: list[str]) -> bool:
    """Whether ``players`` can be seated in pairs with nobody meeting again (by brute force)."""
    met = meetings(state)
    if not players:
        return True
    first = players[0]
    return any(
        not met.get(tuple(sorted((first, other))), 0)  # type: ignore[call-overload]
        and avoidable(state, [p for p in players[1:] if p != other])
        for other in players[1:]
    )


@pytest.mark.parametrize("seed", range(12))
def test_a_swiss_of_two_seats_meets_nobody_again_in_a_round_where_it_can_be_avoided(
    seed: int,
) -> None:
    """Eight entrants over seven rounds: each round where some pairing repeats no meeting (found
    by brute force) is paired without repeats (the last rounds of a Swiss may have none)."""
    rng = random.Random(seed)
    desk = Desk().open(8, rounds=7, ratings=[rng.random() for _ in range(8)])
    clean = 0
    for _ in range(7):
        before = repeats(desk.state)
        could = avoidable(desk.state, [player(i) for i in range(8)])
        desk.play_round(rng)
        if could:
            clean += 1
            assert repeats(desk.state) == before
    assert clean >= 5


def test_a_swiss_of_256_at_tables_of_4_meets_nobody_twice() -> None:
    rng = random.Random(256)
    desk = Desk().open(
        256, seats=4, rounds=6, rules="robbers", ratings=[rng.random() * 40 for _ in range(256)]
    )
    for _ in range(6):
        desk.play_round(rng)
        tables = desk.state.played[-1].tables
        assert len(tables) == 64 and all(len(set(t.seats)) == 4 for t in tables)
    assert repeats(desk.state) == 0


def test_a_swiss_with_bots_fills_short_tables_with_them() -> None:
    rng = random.Random(9)
    desk = Desk().open(255, seats=4, rounds=4, fill="bots:greedy")
    for _ in range(4):
        desk.play_round(rng)
        tables = desk.state.played[-1].tables
        assert len(tables) == 64 and all(len(t.seats) == 4 for t in tables)
        assert sum(t.seats.count("bot:greedy") for t in tables) == 1
        assert sorted(p for t in tables for p in humans(t.seats)) == sorted(
            player(i) for i in range(255)
        )
    assert repeats(desk.state) == 0


@pytest.mark.parametrize(("n", "seats"), [(9, 2), (10, 4), (7, 3)])
def test_nobody_gets_a_second_bye_while_others_have_none(n: int, seats: int) -> None:
    rng = random.Random(n)
    rounds = n // (n % seats)  # as many rounds as give everyone one bye
    desk = Desk().open(n, seats=seats, rounds=rounds, rules="robbers")
    for _ in range(rounds):
        desk.play_round(rng)
        got = Counter(p for r in desk.state.played for p in r.byes)
        counts = [got.get(player(i), 0) for i in range(n)]
        assert max(counts) - min(counts) <= 1
    assert all(len(r.byes) == n % seats for r in desk.state.played)


def test_the_bye_goes_to_the_lowest_in_the_standings() -> None:
    desk = Desk().open(5, rounds=3, ratings=[5, 4, 3, 2, 1])
    assert desk.pair() and desk.state.played[0].byes == (player(4),)


def test_short_tables_with_bots_go_round_fairly() -> None:
    """10 entrants at tables of 4 with bots: tables of 4, 3 and 3; the six at short tables
    change each round so that nobody sits short twice before everyone has once (and so on)."""
    rng = random.Random(2)
    desk = Desk().open(10, seats=4, rounds=5, fill="bots:greedy", rules="robbers-classic")
    for _ in range(5):
        desk.play_round(rng)
        short: Counter[str] = Counter()
        for paired in desk.state.played:
            for table in paired.tables:
                if BOT + "greedy" in table.seats:
                    short.update(table.seats)
        counts = [short.get(player(i), 0) for i in range(10)]
        assert max(counts) - min(counts) <= 1
    assert [sorted(len(humans(t.seats)) for t in r.tables) for r in desk.state.played] == [
        [3, 3, 4]
    ] * 5


@pytest.mark.parametrize("rules", sorted(PRESETS))
def test_tables_of_two_up_to_the_rule_sets_maximum(rules: str) -> None:
    most = PRESETS[rules].max_players
    for seats in range(2, most + 1):
        desk = Desk().open(seats * 3 + 1, seats=seats, rules=rules)
        tables = desk.pair()
        assert len(tables) == 3 and all(len(t.seats) == seats for t in tables)
        assert len(desk.state.played[0].byes) == 1


def test_table_sizes_spread_the_entrants() -> None:
    assert table_sizes(10, 4, bots=False) == ((4, 4), 2)
    assert table_sizes(10, 4, bots=True) == ((4, 3, 3), 0)
    assert table_sizes(5, 4, bots=True) == ((3, 2), 0)
    assert table_sizes(2, 4, bots=True) == ((2,), 0)
    assert table_sizes(256, 4, bots=True) == ((4,) * 64, 0)


def test_the_same_log_pairs_the_same_round() -> None:
    rng = random.Random(11)
    desk = Desk().open(30, seats=3, rounds=4, rules="robbers", fill="bots:solver")
    for _ in range(3):
        desk.play_round(rng)
    replayed = fold(desk.log)
    assert pair(replayed, 4) == pair(desk.state, 4) == pair(fold(list(desk.log)), 4)
    desk.send("pair", {"round": 4}, "service")
    assert tuple(t.seats for t in desk.state.played[-1].tables) == pair(replayed, 4).tables


PAIRINGS_SCRIPT = """
import json, random
from tests.tournament.desk import Desk
rng = random.Random(5)
desk = Desk().open(40, seats=4, rounds=4, rules="robbers", fill="bots:greedy",
                   ratings=[rng.choice([1.0, 2.0]) for _ in range(40)])
for _ in range(4):
    desk.play_round(rng)
print(json.dumps([[t.seats for t in r.tables] for r in desk.state.played]))
print(json.dumps([[r.player, r.rank, r.keys] for r in desk.state.standings]))
"""


def test_pairings_and_standings_do_not_depend_on_the_processs_hash_seed() -> None:
    """Sets and dicts of strings iterate in an order each process salts: nothing a pairing or
    a standing says may come from one."""
    root = Path(__file__).resolve().parents[2]
    outputs = {
        subprocess.run(
            [sys.executable, "-c", PAIRINGS_SCRIPT],
            cwd=root,
            env=os.environ | {"PYTHONPATH": str(root), "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outputs) == 1 and outputs.pop().count("\n") == 2
