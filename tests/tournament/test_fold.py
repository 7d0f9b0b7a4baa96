"""A tournament is its log: random tournaments played to the end with random results, rulings,
withdrawals and refused commands fold back to the state the live decisions built, through the
stored form too, and every standing recorded is the one the fold recomputes."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from shared.core.rulesets import PRESETS
from shared.tournament.commands import SERVICE, TournamentError
from shared.tournament.events import StandingsRecorded, TournamentFinished, event_from, to_data
from shared.tournament.standings import standings
from shared.tournament.state import Tournament, evolve, fold
from tests.tournament.desk import DIRECTOR, Desk, player, random_lines


def play(seed: int) -> Desk:
    """A whole random tournament, from ``seed``."""
    rng = random.Random(seed)
    rules = rng.choice(sorted(PRESETS))
    seats = rng.randint(2, PRESETS[rules].max_players)
    fmt = rng.choice(("swiss", "round_robin"))
    fill = rng.choice(("byes", "bots:greedy", "bots:random"))
    entrants = rng.randint(seats if fill == "byes" else 2, 3 * seats + 3)
    rounds = rng.randint(1, 5) if fmt == "swiss" or rng.random() < 0.5 else 0
    desk = Desk().open(
        entrants,
        rules=rules,
        seats=seats,
        rounds=rounds,
        fill=fill,
        format=fmt,
        ratings=[round(rng.uniform(-5, 40), 3) for _ in range(entrants)],
    )
    while desk.state.current < min(desk.state.rounds, 6):
        try:
            tables = desk.pair()
        except TournamentError as err:
            assert err.code == "too_few_entrants"
            break
        for table in tables:
            if rng.random() < 0.3:
                desk.send(
                    "table_started",
                    {"round": table.round, "table": table.table, "game_id": table.game_id},
                    SERVICE,
                )
            roll = rng.random()
            where = {"round": table.round, "table": table.table}
            if roll < 0.08:
                desk.send("rule", {"kind": "annul", **where, "reason": "misdeal"})
                continue
            if roll < 0.14:
                desk.send(
                    "table_finished",
                    {**where, "game_id": table.game_id, "results": [], "head": [9, "c" * 64]},
                    SERVICE,
                )
            else:
                desk.finish(table, random_lines(rng, rules, len(table.seats)))
            entrants_there = [p for p in table.seats if desk.state.entrant(p)]
            if rng.random() < 0.15 and entrants_there:
                who = rng.choice(entrants_there)
                desk.send("rule", {"kind": "forfeit", **where, "player": who, "reason": "late"})
            if rng.random() < 0.1:
                desk.send(
                    "rule",
                    {
                        "kind": "verdict",
                        **where,
                        "turn": rng.randint(1, 80),
                        "verdict": "upheld",
                        "reason": "disputed",
                    },
                )
            try:  # a repeat the store would have de-duplicated, or a sender retrying: refused
                desk.finish(table, random_lines(rng, rules, len(table.seats)))
                raise AssertionError("a table finished twice")
            except TournamentError as err:
                assert err.code in ("table_finished", "table_annulled")
        active = desk.state.active()
        if rng.random() < 0.3 and active:
            who = rng.choice(active).player
            desk.send("withdraw", {"player": who}, rng.choice((who, DIRECTOR)))
    desk.send("finish", {}, DIRECTOR)
    return desk


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_a_random_tournament_folds_back_to_its_live_state(seed: int) -> None:
    desk = play(seed)
    assert desk.state.status == "finished"
    assert fold(desk.log) == desk.state
    stored = [event_from(e.TYPE, to_data(e)) for e in desk.log]
    assert stored == desk.log
    assert fold(stored) == desk.state


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_every_standing_recorded_is_the_one_its_log_recomputes(seed: int) -> None:
    desk = play(seed)
    state = Tournament()
    for event in desk.log:
        if isinstance(event, StandingsRecorded | TournamentFinished):
            assert event.standings == standings(state)
        state = evolve(state, event)
    rows = desk.state.standings
    assert sorted(r.player for r in rows) == sorted(e.player for e in desk.state.entrants)
    assert [r.rank for r in rows] == sorted(r.rank for r in rows)


def test_a_log_cut_short_folds_to_the_state_of_its_time() -> None:
    desk = play(7)
    state = Tournament()
    for i, event in enumerate(desk.log):
        state = evolve(state, event)
        assert state.version == i + 1
    assert fold(desk.log[: len(desk.log) // 2]).version == len(desk.log) // 2
    assert player(0) in {e.player for e in state.entrants}
