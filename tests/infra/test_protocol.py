"""The messages between processes (``shared/infra/protocol.py``) and the JSON form of commands
(``shared/core/commands.py``): what is encoded decodes to the same value, and malformed input is
refused with a message naming what is wrong."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from shared.core.commands import (
    Command,
    Continue,
    CreateGame,
    Discard,
    Draw,
    End,
    Pass,
    Play,
    RecordScores,
    Sit,
    Start,
    Timeout,
    command_json,
    seat_command,
    sit_command,
)
from shared.infra.protocol import MAX_ENTRY_BYTES, Answer, CommandEntry, MalformedEntry, News


def test_a_command_entry_round_trips() -> None:
    entry = CommandEntry("g1", "seat", "0:a", {"type": "pass"}, 0, "rr:replies:x", "r1", 12.5)
    assert CommandEntry.decode(entry.encode()) == entry
    bare = CommandEntry("g1", "start", "start")
    assert CommandEntry.decode(bare.encode()) == bare


def test_a_command_waited_on_keeps_every_other_field() -> None:
    entry = CommandEntry("g1", "seat", "0:a", {"type": "pass"}, 1, "", "", 12.5)
    waited = entry.waited_on("rr:replies:x", "7-ab")
    assert waited == dataclasses.replace(entry, reply="rr:replies:x", rid="7-ab")
    # every field set apart from the two: a field added later and not copied shows here
    assert all(getattr(waited, f.name) for f in dataclasses.fields(entry))


def test_an_answer_round_trips() -> None:
    answer = Answer("r1", "g1", "accepted", 7, "ab12", seat=1, duplicate=True)
    assert Answer.decode(answer.encode()) == answer
    refused = Answer("r2", "g1", "refused", 0, "", "bad_command", "no such card")
    assert Answer.decode(refused.encode()) == refused
    assert Answer.decode({b"c": json.dumps(refused.to_json()).encode()}) == refused


def test_news_round_trips_with_its_records_in_order() -> None:
    news = News("g1", 9, ("Drawn", "TurnStarted"), (b"one", b"two"))
    fields = news.encode()
    assert sorted(fields) == [b"c", b"e1", b"e2"]
    assert News.decode(fields) == news
    assert News.decode(News("g1", 3, ()).encode()) == News("g1", 3, ())
    # Only the version is optional: news that says only that the game changed.
    assert News.decode({b"c": b'{"game": "g1", "types": []}'}).version == 0


def entry(**doc: Any) -> dict[bytes, bytes]:
    base = {"game": "g1", "kind": "seat", "cid": "c1", "body": {}, "seat": 0}
    return {b"c": json.dumps({**base, **doc}).encode()}


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({b"x": b"1"}, "no command field 'c'"),
        ({b"c": b"{nope"}, "not JSON"),
        ({b"c": b"[1]"}, "not a JSON object"),
        ({b"c": b"[" * 100_000}, "nested too deeply"),
        ({b"c": b" " * (MAX_ENTRY_BYTES + 1)}, "bytes; at most"),
        (entry(game=5), "field 'game'"),
        (entry(seat=True), "field 'seat'"),
        (entry(seat=64), "'seat' must be 0-63"),
        (entry(cid=""), "'cid' must be 1-200"),
        (entry(kind="explode"), "kind 'explode' is unknown"),
        (entry(extra=1), "unknown fields ['extra']"),
        (entry(game="a{b}"), "a game id is"),
    ],
)
def test_a_malformed_command_entry_is_refused_with_why(fields: Any, why: str) -> None:
    with pytest.raises(MalformedEntry) as refused:
        CommandEntry.decode(fields)
    assert why in str(refused.value)


def answer(**doc: Any) -> dict[bytes, bytes]:
    base = {"rid": "r1", "game": "g1", "status": "accepted", "version": 1, "head": "h"}
    return {b"c": json.dumps({**base, **doc}).encode()}


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({b"c": b"{}"}, "field 'rid'"),  # the requester's own first entry
        (answer(status="maybe"), "status 'maybe' is unknown"),
        (answer(version="1"), "field 'version'"),
        (answer(version=True), "field 'version'"),
        (answer(duplicate=1), "field 'duplicate'"),
        (answer(more=1), "unknown fields ['more']"),
    ],
)
def test_a_malformed_answer_is_refused_with_why(fields: Any, why: str) -> None:
    with pytest.raises(MalformedEntry) as refused:
        Answer.decode(fields)
    assert why in str(refused.value)


def news(**doc: Any) -> dict[bytes, bytes]:
    return {b"c": json.dumps({"game": "g1", "version": 1, "types": [], **doc}).encode()}


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({b"e1": b"record"}, "no news field 'c'"),
        (news(types="RoundEnded"), "field 'types'"),
        (news(types=[["RoundEnded"]]), "list of event type names"),
        (news(game=5), "field 'game'"),
        (news(game="a{b}"), "a game id is"),
        (news(version=-1), "'version' must be 0 or more"),
    ],
)
def test_malformed_news_is_refused_with_why(fields: Any, why: str) -> None:
    with pytest.raises(MalformedEntry) as refused:
        News.decode(fields)
    assert why in str(refused.value)


SEAT_COMMANDS: list[Command] = [
    Play(1, ((0, 1, 2), (13, 26, 39))),
    Draw(1, "pile"),
    Draw(0),
    End(2),
    Pass(0),
    Discard(1, 51),
]


@pytest.mark.parametrize("command", SEAT_COMMANDS)
def test_a_seat_commands_json_is_what_the_api_reads_back(command: Any) -> None:
    body = command_json(command, with_seat=False)
    assert "seat" not in body
    assert seat_command(body["type"], command.seat, body) == command
    assert command_json(command) == {"type": body["type"], "seat": command.seat, **body}


def test_every_command_has_a_json_form() -> None:
    assert sit_command(command_json(Sit("ann", "s1"))) == Sit("ann", "s1")
    assert command_json(CreateGame("g1", "robbers", {"x": 1}, 2, "c0")) == {
        "type": "create",
        "game_id": "g1",
        "rules": "robbers",
        "options": {"x": 1},
        "seats": 2,
        "commitment": "c0",
    }
    assert command_json(Start()) == {"type": "start"}
    assert command_json(Timeout(4)) == {"type": "timeout", "number": 4}
    assert command_json(Continue()) == {"type": "continue"}
    assert command_json(RecordScores(2, 1, True, (0, 1), None)) == {
        "type": "record_scores",
        "round": 2,
        "winner": 1,
        "went_out": True,
        "seats": [0, 1],
        "scores": None,
    }
    with pytest.raises(TypeError):
        command_json("play")  # type: ignore[arg-type]
