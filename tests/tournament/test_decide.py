"""``decide``: the state machine (created, registering, running, finished), who may send what,
registration limits, withdrawals between rounds, and every command repeated after it took
effect refused with a code that says so (never applied twice)."""

from __future__ import annotations

from typing import Any

import pytest

from shared.tournament.commands import (
    MAX_ENTRANTS,
    SERVICE,
    FinishTournament,
    PairRound,
    TournamentError,
)
from shared.tournament.decide import next_command
from shared.tournament.events import PlayerWithdrew, RoundPaired, TableFinished
from shared.tournament.state import fold
from tests.tournament.desk import DIRECTOR, TOURNAMENT, Desk, player

P0, P1, P2, P3 = (player(i) for i in range(4))
CREATE = {
    "tournament_id": TOURNAMENT,
    "name": "Club night",
    "rules": "robbers",
    "format": "swiss",
    "rounds": 2,
    "table_seats": 2,
    "fill": "byes",
}


def refused(desk: Desk, kind: str, payload: dict[str, Any] | None, actor: str) -> TournamentError:
    """The refusal of a command, checking it changed nothing."""
    before, log = desk.state, list(desk.log)
    with pytest.raises(TournamentError) as caught:
        desk.send(kind, payload, actor)
    assert desk.state == before and desk.log == log
    return caught.value


def test_a_tournament_goes_from_created_to_finished() -> None:
    desk = Desk()
    assert desk.state.status == ""
    desk.send("create", CREATE)
    assert desk.state.status == "created" and desk.state.director == DIRECTOR
    desk.send("open")
    assert desk.state.status == "registering"
    for i in range(3):
        desk.send("register", {"player": player(i), "name": f"P{i}"}, player(i))
    desk.send("close")
    assert desk.state.status == "running"
    for number in (1, 2):
        for table in desk.pair():
            desk.send(
                "table_started",
                {"round": number, "table": table.table, "game_id": table.game_id},
                SERVICE,
            )
            desk.finish_by(table, list(table.seats))
    desk.send("finish", {}, SERVICE)
    assert desk.state.status == "finished"
    assert desk.state.standings == desk.state.history[-1][1]
    assert fold(desk.log) == desk.state


@pytest.mark.parametrize(
    ("kind", "payload", "actor", "code"),
    [
        ("open", {}, P0, "not_director"),
        ("close", {}, SERVICE, "not_director"),
        ("register", {"player": P1, "name": "x"}, P0, "not_allowed"),
        ("register", {"player": "bot:greedy", "name": "g"}, P0, "not_allowed"),
        ("register", {"player": "bot:greedy", "name": "g"}, "bot:greedy", "not_director"),
        ("withdraw", {"player": P1}, P0, "not_allowed"),
    ],
)
def test_who_may_send_what_before_the_start(
    kind: str, payload: dict[str, Any], actor: str, code: str
) -> None:
    desk = Desk()
    desk.send("create", CREATE)
    if kind != "open":
        desk.send("open")
        desk.send("register", {"player": P1, "name": "P1"}, P1)
    error = refused(desk, kind, payload, actor)
    assert error.code == code and error.field in ("actor", "player")


def test_the_service_and_the_director_run_rounds_and_players_do_not() -> None:
    desk = Desk().open(4)
    error = refused(desk, "pair", {"round": 1}, P0)
    assert (error.code, error.field) == ("not_allowed", "actor")
    desk.send("pair", {"round": 1}, DIRECTOR)
    table = desk.state.played[0].tables[0]
    start = {"round": 1, "table": 1, "game_id": table.game_id}
    assert refused(desk, "table_started", start, P0).code == "not_allowed"
    desk.send("table_started", start, SERVICE)
    assert refused(desk, "finish", {}, P0).code == "not_allowed"


def test_a_tournament_is_created_by_an_account() -> None:
    for actor in (SERVICE, "bot:greedy", ""):
        assert refused(Desk(), "create", CREATE, actor).code == "not_allowed"


def test_commands_before_a_tournament_exists_are_refused() -> None:
    error = refused(Desk(), "open", {}, DIRECTOR)
    assert (error.code, error.field) == ("no_tournament", "tournament_id")


@pytest.mark.parametrize(
    ("setup", "kind", "payload", "actor", "code"),
    [
        ("created", "create", CREATE, DIRECTOR, "tournament_exists"),
        ("registering", "open", {}, DIRECTOR, "already_open"),
        ("running", "open", {}, DIRECTOR, "already_closed"),
        ("running", "close", {}, DIRECTOR, "already_closed"),
        ("registering", "register", {"player": P0, "name": "P0"}, P0, "already_registered"),
        ("running", "register", {"player": "e" * 32, "name": "late"}, "e" * 32, "already_closed"),
        ("withdrawn", "withdraw", {"player": P0}, P0, "already_withdrawn"),
        ("paired", "pair", {"round": 1}, SERVICE, "round_paired"),
        ("started", "table_started", "table", SERVICE, "table_started"),
        ("finished_table", "table_started", "table", SERVICE, "table_finished"),
        ("finished_table", "table_finished", "results", SERVICE, "table_finished"),
        ("finished", "finish", {}, SERVICE, "tournament_finished"),
        ("finished", "pair", {"round": 2}, SERVICE, "tournament_finished"),
    ],
)
def test_a_command_repeated_after_it_took_effect_is_refused_with_its_own_code(
    setup: str, kind: str, payload: Any, actor: str, code: str
) -> None:
    desk = Desk()
    desk.send("create", CREATE)
    if setup != "created":
        desk.send("open")
        for i in range(4):
            desk.send("register", {"player": player(i), "name": f"P{i}"}, player(i))
    if setup not in ("created", "registering"):
        desk.send("close")
    if setup == "withdrawn":
        desk.send("withdraw", {"player": P0}, P0)
    table = None
    if setup in ("paired", "started", "finished_table", "finished"):
        tables = desk.pair()
        table = tables[0]
        if setup == "started":
            desk.send("table_started", _start(table), SERVICE)
        if setup in ("finished_table", "finished"):
            for t in tables:
                desk.finish_by(t, list(t.seats))
        if setup == "finished":
            desk.send("finish", {}, DIRECTOR)
    if payload == "table":
        assert table is not None
        payload = _start(table)
    elif payload == "results":
        assert table is not None
        payload = {**_start(table), "results": [], "head": [3, "ab"]}
    assert refused(desk, kind, payload, actor).code == code


def _start(table: Any) -> dict[str, Any]:
    return {"round": table.round, "table": table.table, "game_id": table.game_id}


def test_a_pairing_sent_twice_makes_one_round() -> None:
    desk = Desk().open(4)
    desk.send("pair", {"round": 1}, SERVICE)
    assert refused(desk, "pair", {"round": 1}, SERVICE).code == "round_paired"
    assert sum(isinstance(e, RoundPaired) for e in desk.log) == 1


def test_a_table_result_sent_twice_counts_once() -> None:
    desk = Desk().open(4, rounds=2)
    tables = desk.pair()
    desk.finish_by(tables[0], list(tables[0].seats))
    with pytest.raises(TournamentError) as caught:
        desk.finish_by(tables[0], list(tables[0].seats))
    assert caught.value.code == "table_finished"
    assert sum(isinstance(e, TableFinished) for e in desk.log) == 1


@pytest.mark.parametrize(
    ("payload", "code", "field"),
    [
        ({"round": 3}, "round_not_due", "round"),
        ({"round": 2}, "round_in_play", "round"),
    ],
)
def test_a_round_is_paired_when_it_is_due(payload: dict[str, Any], code: str, field: str) -> None:
    desk = Desk().open(4, rounds=2)
    desk.pair()
    error = refused(desk, "pair", payload, SERVICE)
    assert (error.code, error.field) == (code, field)
    assert "allowed" in error.message or "in play" in error.message


def test_no_round_past_the_last() -> None:
    desk = Desk().open(2, rounds=1)
    (table,) = desk.pair()
    desk.finish_by(table, list(table.seats))
    error = refused(desk, "pair", {"round": 2}, SERVICE)
    assert error.code == "round_not_due" and "every round is paired" in error.message


def test_the_service_finishes_only_after_the_last_round_the_director_earlier() -> None:
    desk = Desk().open(2, rounds=3)
    (table,) = desk.pair()
    assert refused(desk, "finish", {}, DIRECTOR).code == "round_in_play"
    desk.finish_by(table, list(table.seats))
    assert refused(desk, "finish", {}, SERVICE).code == "rounds_left"
    desk.send("finish", {}, DIRECTOR)
    assert desk.state.status == "finished"


@pytest.mark.parametrize(("fill", "seats", "need"), [("byes", 4, 4), ("bots:greedy", 4, 2)])
def test_registration_needs_enough_entrants_to_fill_a_table(
    fill: str, seats: int, need: int
) -> None:
    desk = Desk()
    desk.send("create", {**CREATE, "table_seats": seats, "fill": fill})
    desk.send("open")
    for i in range(need - 1):
        desk.send("register", {"player": player(i), "name": f"P{i}"}, player(i))
    error = refused(desk, "close", {}, DIRECTOR)
    assert error.code == "too_few_entrants" and f"at least {need}" in error.message
    desk.send("register", {"player": player(need), "name": "last"}, player(need))
    desk.send("close")
    assert desk.state.status == "running"


def test_registration_is_limited() -> None:
    desk = Desk()
    desk.send("create", CREATE)
    desk.send("open")
    for i in range(MAX_ENTRANTS):
        desk.send("register", {"player": player(i), "name": f"P{i}"})
    error = refused(desk, "register", {"player": "f" * 32, "name": "one more"}, "f" * 32)
    assert error.code == "tournament_full"


def test_registration_waits_for_the_director_to_open_it() -> None:
    desk = Desk()
    desk.send("create", CREATE)
    assert refused(desk, "register", {"player": P0, "name": "P0"}, P0).code == "not_registering"
    assert refused(desk, "close", {}, DIRECTOR).code == "not_registering"


def test_the_bot_that_fills_short_tables_is_no_entrant() -> None:
    desk = Desk()
    desk.send("create", {**CREATE, "fill": "bots:greedy"})
    desk.send("open")
    error = refused(desk, "register", {"player": "bot:greedy", "name": "g"}, DIRECTOR)
    assert (error.code, error.field) == ("bad_command", "player")
    desk.send("register", {"player": "bot:solver", "name": "solver"}, DIRECTOR)
    assert desk.state.entrant("bot:solver") is not None


def test_withdrawing_before_the_start_removes_the_entrant() -> None:
    desk = Desk()
    desk.send("create", CREATE)
    desk.send("open")
    desk.send("register", {"player": P0, "name": "P0"}, P0)
    desk.send("withdraw", {"player": P0}, P0)
    assert desk.state.entrants == ()
    desk.send("register", {"player": P0, "name": "P0 again"}, P0)
    assert desk.state.entrants[0].name == "P0 again"


def test_withdrawing_while_running_waits_for_the_players_table() -> None:
    desk = Desk().open(5, rounds=3, ratings=[5, 4, 3, 2, 1])
    tables = desk.pair()
    assert desk.state.played[0].byes == (player(4),)
    error = refused(desk, "withdraw", {"player": P0}, P0)
    assert (error.code, error.field) == ("table_in_play", "player")
    desk.send("withdraw", {"player": player(4)}, DIRECTOR)  # its bye is no table in play
    desk.finish_by(tables[0], list(tables[0].seats))
    desk.send("withdraw", {"player": P0}, P0)  # its table is over
    assert [e for e in desk.log if isinstance(e, PlayerWithdrew)] == [
        PlayerWithdrew(player(4)),
        PlayerWithdrew(P0),
    ]
    desk.finish_by(tables[1], list(tables[1].seats))
    second = desk.pair()
    seated = {p for t in second for p in t.seats} | set(desk.state.played[1].byes)
    assert seated == {P1, P2, P3}


def test_a_withdrawal_that_leaves_too_few_stops_the_pairing() -> None:
    desk = Desk().open(2, rounds=2)
    (table,) = desk.pair()
    desk.finish_by(table, list(table.seats))
    desk.send("withdraw", {"player": P0}, P0)
    assert refused(desk, "pair", {"round": 2}, SERVICE).code == "too_few_entrants"


@pytest.mark.parametrize(
    ("change", "code", "field"),
    [
        ({"game_id": "g" + "0" * 16}, "wrong_game", "game_id"),
        ({"table": 9}, "no_such_table", "table"),
        ({"round": 2}, "no_such_table", "round"),
    ],
)
def test_a_table_is_named_by_round_table_and_game(
    change: dict[str, Any], code: str, field: str
) -> None:
    desk = Desk().open(4)
    table = desk.pair()[0]
    error = refused(desk, "table_started", {**_start(table), **change}, SERVICE)
    assert (error.code, error.field) == (code, field)


@pytest.mark.parametrize(
    "results",
    [
        [{"player": P0, "seat": 0}, {"player": P2, "seat": 1}],  # someone else's result
        [{"player": P0, "seat": 0}, {"player": P1, "seat": 0}],  # a seat twice
        [{"player": P0, "seat": 0}],  # a seat missing
    ],
)
def test_results_must_be_the_tables_seats(results: list[dict[str, Any]]) -> None:
    desk = Desk().open(4, ratings=[4, 3, 2, 1])
    table = desk.pair()[0]
    assert set(table.seats) == {P0, P1}
    lines = [{"winner": False, "total": 0, "outs": 0, "wins": 0, **r} for r in results]
    error = refused(
        desk, "table_finished", {**_start(table), "results": lines, "head": [5, "ab"]}, SERVICE
    )
    assert (error.code, error.field) == ("results_wrong", "results")
    assert "allowed" in error.message


def test_the_next_command_pairs_each_round_then_finishes() -> None:
    desk = Desk().open(4, rounds=2)
    assert next_command(desk.state) == PairRound(1)
    tables = desk.pair()
    assert next_command(desk.state) is None  # round 1 in play
    for table in tables:
        desk.finish_by(table, list(table.seats))
    assert next_command(desk.state) == PairRound(2)
    for table in desk.pair():
        desk.finish_by(table, list(table.seats))
    assert next_command(desk.state) == FinishTournament()
    desk.send("finish", {}, SERVICE)
    assert next_command(desk.state) is None


def test_the_service_finishes_a_tournament_withdrawals_left_too_few_to_pair() -> None:
    desk = Desk().open(2, rounds=3)
    (table,) = desk.pair()
    desk.finish_by(table, list(table.seats))
    desk.send("withdraw", {"player": P1}, P1)
    assert next_command(desk.state) == FinishTournament()
    desk.send("finish", {}, SERVICE)
    assert desk.state.status == "finished"


def test_a_round_robin_too_long_to_play_is_refused_at_the_close() -> None:
    """A round robin's rounds come from its entrants at the close: 66 entrants at tables of two
    would play 65 rounds, past the 64 a tournament may have."""
    desk = Desk()
    desk.send("create", {**CREATE, "format": "round_robin", "rounds": 0})
    desk.send("open")
    for i in range(66):
        desk.send("register", {"player": player(i), "name": f"P{i}"}, player(i))
    err = refused(desk, "close", None, DIRECTOR)
    assert err.code == "tournament_full" and err.field == "entrants"
    assert "65 rounds" in err.message and "at most 64" in err.message
    for i in (64, 65):
        desk.send("withdraw", {"player": player(i)}, player(i))
    desk.send("close")  # 64 entrants at tables of two: 63 rounds
    assert desk.state.status == "running" and desk.state.rounds == 63
