"""Commands from JSON: a malformed one is refused naming the field, what was wrong and what
is allowed; ``command_parts`` gives back what ``command_from`` reads. Events to their stored
form and back. And the package stays pure: no clock, no randomness, no I/O."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from shared.core.events import GameCreated, MatchEnded, PlayerSeated, SeatLeft
from shared.tournament import events as tevents
from shared.tournament.commands import (
    KINDS,
    CreateTournament,
    FinishTable,
    Register,
    Rule,
    TournamentError,
    command_from,
    command_parts,
)
from shared.tournament.events import (
    EVENT_TYPES,
    SeatedTable,
    SeatResult,
    Standing,
    UnknownEvent,
    event_from,
    to_data,
)
from shared.tournament.tables import seated_players, table_game_id, table_result

PACKAGE = Path(__file__).resolve().parents[2] / "shared" / "tournament"
CREATE: dict[str, Any] = {
    "tournament_id": "t00000000000000ff",
    "name": "Spring open",
    "rules": "rummikub",
    "options": {"turn_seconds": 90},
    "format": "swiss",
    "rounds": 5,
    "table_seats": 4,
    "fill": "bots:solver",
}


def bad(kind: str, payload: dict[str, Any]) -> TournamentError:
    with pytest.raises(TournamentError) as caught:
        command_from(kind, payload)
    assert caught.value.code == "bad_command"
    return caught.value


@pytest.mark.parametrize(
    ("change", "field", "allowed"),
    [
        ({"tournament_id": "g00000000000000ff"}, "tournament_id", "16 lowercase hex"),
        ({"name": ""}, "name", "non-empty string"),
        ({"rules": "chess"}, "rules", "allowed rule sets"),
        ({"options": {"jokers": 99}}, "options", "an integer from 0 to 8"),
        ({"options": []}, "options", "object"),
        ({"format": "arena"}, "format", "'swiss', 'round_robin'"),
        ({"rounds": 0}, "rounds", "from 1 to 64"),
        ({"rounds": True}, "rounds", "an integer"),
        ({"table_seats": 5}, "table_seats", "2 to 4"),
        ({"table_seats": 1}, "table_seats", "2 to 4"),
        ({"fill": "bots:nobody"}, "fill", "'byes'"),
        ({"fill": "robots"}, "fill", "'bots:<name>'"),
    ],
)
def test_a_bad_create_names_its_field_and_what_is_allowed(
    change: dict[str, Any], field: str, allowed: str
) -> None:
    error = bad("create", {**CREATE, **change})
    assert error.field == field
    assert allowed in error.message
    assert error.to_json() == {"error": "bad_command", "message": error.message, "field": field}


def test_a_round_robin_may_leave_its_rounds_to_the_cycle() -> None:
    command = command_from("create", {**CREATE, "format": "round_robin", "rounds": 0})
    assert isinstance(command, CreateTournament) and command.rounds == 0
    assert (
        command_from(
            "create", {k: v for k, v in CREATE.items() if k != "rounds"} | {"format": "round_robin"}
        ).rounds
        == 0
    )  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("rules", "most"), [("robbers", 5), ("robbers-classic", 6), ("rummikub", 4)]
)
def test_tables_seat_up_to_the_rule_sets_maximum(rules: str, most: int) -> None:
    ok = command_from("create", {**CREATE, "rules": rules, "options": {}, "table_seats": most})
    assert ok.table_seats == most  # type: ignore[union-attr]
    assert (
        bad("create", {**CREATE, "rules": rules, "options": {}, "table_seats": most + 1}).field
        == "table_seats"
    )


@pytest.mark.parametrize(
    ("kind", "payload", "field"),
    [
        ("register", {"name": "x"}, "player"),
        ("register", {"player": "bot:nobody", "name": "x"}, "player"),
        ("register", {"player": "service", "name": "x"}, "player"),
        ("register", {"player": "a" * 65, "name": "x"}, "player"),
        ("register", {"player": "abc", "name": "x", "rating": "high"}, "rating"),
        ("register", {"player": "abc", "name": "x", "rating": float("nan")}, "rating"),
        ("withdraw", {}, "player"),
        ("pair", {"round": 0}, "round"),
        ("table_started", {"round": 1, "table": 1, "game_id": "x"}, "game_id"),
        (
            "table_finished",
            {"round": 1, "table": 1, "game_id": "g" + "0" * 16, "results": "all", "head": [1, "a"]},
            "results",
        ),
        (
            "table_finished",
            {
                "round": 1,
                "table": 1,
                "game_id": "g" + "0" * 16,
                "results": [
                    {"player": "a", "seat": -1, "winner": True, "total": 0, "outs": 0, "wins": 0}
                ],
                "head": [1, "a"],
            },
            "results",
        ),
        (
            "table_finished",
            {"round": 1, "table": 1, "game_id": "g" + "0" * 16, "results": [], "head": [0, "a"]},
            "head",
        ),
        ("launch", {}, "kind"),
    ],
)
def test_a_malformed_command_names_its_field(
    kind: str, payload: dict[str, Any], field: str
) -> None:
    error = bad(kind, payload)
    assert error.field == field


COMMANDS = [
    command_from("create", CREATE),
    command_from("open", {}),
    Register("bot:greedy", "Greedy", 12.5),
    command_from("withdraw", {"player": "abc"}),
    command_from("close", {}),
    command_from("pair", {"round": 3}),
    command_from("table_started", {"round": 1, "table": 2, "game_id": "g" + "1" * 16}),
    FinishTable(
        1,
        2,
        "g" + "1" * 16,
        (SeatResult("abc", 0, True, -5, 1, 2), SeatResult("bot:greedy", 1, False, 5, 0, 1)),
        (9, "ff"),
    ),
    Rule("verdict", 2, 1, "disputed", "", 14, "upheld"),
    Rule("forfeit", 2, 1, "no show", "abc"),
    command_from("finish", {}),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: type(c).__name__)
def test_command_parts_is_command_froms_inverse(command: Any) -> None:
    kind, payload = command_parts(command)
    assert kind in KINDS
    assert command_from(kind, payload) == command


EVENTS = [
    tevents.TournamentCreated(
        "t" + "0" * 16, "Open", "dir", "robbers", {"jokers": 2}, "swiss", 4, 3, "byes"
    ),
    tevents.RegistrationOpened(),
    tevents.PlayerRegistered("abc", "Abc", 3.25),
    tevents.PlayerWithdrew("abc"),
    tevents.RegistrationClosed(),
    tevents.RoundPaired(1, (SeatedTable(1, "g" + "2" * 16, ("abc", "bot:greedy")),), ("def",)),
    tevents.TableStarted(1, 1, "g" + "2" * 16),
    tevents.TableFinished(
        1, 1, "g" + "2" * 16, (SeatResult("abc", 0, True, None, 1, 1),), (12, "ab")
    ),
    tevents.RulingRecorded("verdict", 1, 1, "", "why", 3, "upheld"),
    tevents.RulingRecorded("annul", 1, 1, "", "why"),
    tevents.StandingsRecorded(
        1, (Standing(1, "abc", "Abc", 2.0, (2.0, 1.5), 1, 0, 0, False, ("round 1: bye",)),)
    ),
    tevents.TournamentFinished(()),
]


def test_every_event_type_is_tried() -> None:
    assert {type(e) for e in EVENTS} == set(EVENT_TYPES.values())


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.TYPE)
def test_an_event_comes_back_from_its_stored_form(event: tevents.Event) -> None:
    import orjson

    data = orjson.loads(orjson.dumps(to_data(event)))
    assert event_from(event.TYPE, data) == event


def test_a_stored_event_that_fits_no_type_is_refused() -> None:
    with pytest.raises(UnknownEvent):
        event_from("TournamentExploded", {})
    with pytest.raises(UnknownEvent):
        event_from("PlayerRegistered", {"player": "a"})
    with pytest.raises(UnknownEvent):
        event_from("RoundPaired", {"round": 1, "tables": "x", "byes": []})


def test_a_tables_game_id_is_derived_and_stable() -> None:
    game = table_game_id("t" + "0" * 16, 2, 3)
    assert game == table_game_id("t" + "0" * 16, 2, 3)
    assert len(game) == 17 and game[0] == "g" and int(game[1:], 16) >= 0
    ids = {table_game_id("t" + "0" * 16, r, t) for r in range(1, 9) for t in range(1, 65)}
    assert len(ids) == 8 * 64
    assert game != table_game_id("t" + "0" * 15 + "1", 2, 3)


def test_a_tables_result_is_read_from_its_games_match_ended() -> None:
    log = [
        GameCreated("g" + "0" * 16, "robbers", {}, 3, "c"),
        PlayerSeated(0, "Ann", "s", player="acc1"),
        PlayerSeated(1, "Greedy bot", "s", bot="greedy"),
        PlayerSeated(2, "Guest", "s"),
        SeatLeft(2),
        PlayerSeated(2, "Bo", "s", player="acc2"),
        MatchEnded(winners=(2,), totals=(40, 55, 10), outs=(1, 0, 3), wins=(1, 0, 4)),
    ]
    players = seated_players(log)
    assert players == ("acc1", "bot:greedy", "acc2")
    ended = log[-1]
    assert isinstance(ended, MatchEnded)
    assert table_result(players, ended) == (
        SeatResult("acc1", 0, False, 40, 1, 1),
        SeatResult("bot:greedy", 1, False, 55, 0, 0),
        SeatResult("acc2", 2, True, 10, 3, 4),
    )
    unscored = MatchEnded(winners=(0, 1), totals=None, outs=(0, 0), wins=(1, 1))
    assert [r.total for r in table_result(("a", "b"), unscored)] == [None, None]
    with pytest.raises(ValueError, match="seats"):
        table_result(("a",), unscored)


IMPURE = {"time", "random", "datetime", "os", "socket", "asyncio", "uuid", "secrets", "redis"}


def test_the_tournament_core_reads_no_clock_no_randomness_and_does_no_io() -> None:
    for path in sorted(PACKAGE.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in IMPURE, f"{path.name} imports {name}"
                assert not name.startswith(("shared.infra", "services")), path.name
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id != "open", f"{path.name} opens a file"
