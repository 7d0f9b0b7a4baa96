"""Bad input on the command streams: refused and recorded, never a crash, never a touched game.

Entries are written straight to a command stream (XADD), past any gateway check. A malformed
entry goes to the dead-letter stream with its reason and is acknowledged; a well-formed command
the rules cannot take is answered ``refused`` and appends nothing; an entry whose handling keeps
raising is retried through the claim and dead-lettered after ``max_deliveries``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from services.referee.referee import Referee
from shared.infra.bus import REFEREES, partition_of
from shared.infra.chain import verify_chain
from shared.infra.protocol import MAX_ENTRY_BYTES, CommandEntry
from tests.services.conftest import Stack
from tests.services.driver import create_game, drive


def metric(referee: Referee, name: str, **labels: str) -> float:
    """The sum of the samples of the referee's /metrics text with that name and labels."""
    return sum(float(sample.value) for sample in samples(referee, name, **labels))


def samples(referee: Referee, name: str, **labels: str) -> list[Any]:
    text = generate_latest(referee.metrics.registry).decode()
    return [
        sample
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items())
    ]


async def dead_letters(stack: Stack) -> list[dict[str, bytes]]:
    entries = await stack.client.xrange(stack.keys.dead_letters())
    return [{k.decode(): v for k, v in fields.items()} for _, fields in entries]


async def pending(stack: Stack) -> int:
    total = 0
    for partition in range(stack.settings.partitions):
        summary = await stack.client.xpending(stack.keys.command_stream(partition), REFEREES)
        total += int(summary["pending"])
    return total


async def game_log_intact(stack: Stack, game_id: str, version: int) -> None:
    """The game is exactly where it was: same version, same events, a valid chain."""
    events = await stack.games.store.read(game_id)
    assert len(events) == version
    assert (await stack.games.store.version(game_id))[0] == version
    assert await stack.client.xlen(stack.keys.events(game_id)) == version
    assert verify_chain(events) is None


def command(game: str, **extra: Any) -> bytes:
    doc: dict[str, Any] = {"game": game, "kind": "seat", "cid": "c1", "seat": 0, "body": {}}
    doc.update(extra)
    return json.dumps(doc).encode()


async def test_malformed_entries_are_dead_lettered_and_the_game_is_untouched(
    stack: Stack,
) -> None:
    game_id = await create_game(stack.requester, "robbers", 2)
    version = (await stack.games.store.version(game_id))[0]
    stream = stack.keys.command_stream(partition_of(game_id, stack.settings.partitions))
    huge_layout = [["QH"] * 20_000] * 5
    malformed: list[dict[bytes, bytes]] = [
        {b"c": b"\xff\xfe\x00\x81garbage"},
        {b"c": b"{not json"},
        {b"c": b"[1, 2, 3]"},
        {b"c": b"[" * 100_000},  # nested too deeply for the parser
        {b"x": b"no command field"},
        {b"c": json.dumps({"game": 5, "kind": "seat", "cid": "c"}).encode()},
        {b"c": command(game_id, seat="0")},
        {b"c": command(game_id, seat=True)},
        {b"c": command(game_id, seat=-1)},
        {b"c": command(game_id, body=["play"])},
        {b"c": command(game_id, cid=7)},
        {b"c": command(game_id, cid="")},
        {b"c": command(game_id, kind="explode")},
        {b"c": command(game_id, extra="field")},
        {b"c": command("a{b}c")},  # not a game id: it would name another game's hash tag
        {b"c": command(game_id, body={"type": "play", "layout": huge_layout})},
        # the answer would go to the game's own event stream: refused, not written
        {b"c": command(game_id, body={"type": "pass"}, reply=stack.keys.events(game_id))},
    ]
    assert len(malformed[-2][b"c"]) > MAX_ENTRY_BYTES
    for fields in malformed:
        await stack.client.xadd(stream, fields)

    letters = await stack.until(lambda: _at_least(dead_letters(stack), len(malformed)), timeout=10)
    assert len(letters) == len(malformed)
    for letter in letters:
        assert letter["reason"].startswith(b"malformed: "), letter["reason"]
        assert letter["stream"] == stream.encode()
        assert len(letter["entry"]) <= 16 * 1024
    reasons = b"\n".join(letter["reason"] for letter in letters)
    for why in (b"not JSON", b"too deeply", b"no command field", b"unknown fields", b"bytes;"):
        assert why in reasons, why
    assert await stack.until(lambda: _is_zero(pending(stack)))
    await game_log_intact(stack, game_id, version)
    assert metric(stack.referee, "referee_commands_total", kind="malformed") == len(malformed)
    assert metric(stack.referee, "referee_dead_letters_total", reason="malformed") == len(malformed)
    assert stack.referee.running and await stack.referee.ready() == (True, "consuming")

    # The referee goes on refereeing the same game.
    driven = await drive(
        stack.requester, stack.games, game_id, ["greedy", "random"], until=_after(version + 6)
    )
    assert driven.commands > 0
    assert verify_chain(await stack.games.store.read(game_id)) is None


async def test_commands_the_rules_cannot_take_are_refused_without_an_event(
    stack: Stack,
) -> None:
    game_id = await create_game(stack.requester, "robbers", 2)
    loaded = await stack.games.load(game_id, fresh=True)
    version, seat = loaded.version, loaded.state.turn.seat  # type: ignore[union-attr]
    missing = "no-such-game"
    refused = [
        CommandEntry(game_id, "seat", "a", {"type": "fly"}, seat=seat),
        CommandEntry(game_id, "seat", "b", {"type": ["play"]}, seat=seat),
        CommandEntry(game_id, "seat", "c", {"type": "play", "layout": "QH KH"}, seat=seat),
        CommandEntry(game_id, "seat", "d", {"type": "play", "layout": [[1, 2, 3]]}, seat=seat),
        CommandEntry(game_id, "seat", "e", {"type": "play", "layout": [["QH", None]]}, seat=seat),
        CommandEntry(game_id, "seat", "f", {"type": "play", "layout": [{"a": 1}]}, seat=seat),
        CommandEntry(game_id, "seat", "g", {"type": "discard", "card": ["QH"]}, seat=seat),
        CommandEntry(game_id, "seat", "h", {"type": "draw", "source": "sky"}, seat=seat),
        CommandEntry(game_id, "seat", "i", {"type": "draw"}),  # no seat
        CommandEntry(game_id, "seat", "j", {"type": "draw"}, seat=1 - seat),  # not its turn
        CommandEntry(game_id, "sit", "k", {"name": ["x"]}),
        CommandEntry(game_id, "timeout", "l", {"number": "soon"}),
        CommandEntry(game_id, "timeout", "m", {}),
        CommandEntry(game_id, "create", "n", {"rules": "robbers", "seats": 2, "options": {}}),
        CommandEntry(game_id, "continue", "o"),
        CommandEntry(game_id, "start", "p"),
        CommandEntry(missing, "seat", "q", {"type": "draw"}, seat=0),
        CommandEntry(missing, "sit", "r", {"name": "x"}),
        CommandEntry(missing, "start", "s"),
        CommandEntry(missing, "timeout", "t", {"number": 1}),
        CommandEntry(missing, "continue", "u"),
        CommandEntry(missing, "create", "v", {"rules": "robbers", "seats": "2"}),
        CommandEntry(missing, "create", "w", {"rules": 5, "seats": 2}),
        CommandEntry(missing, "create", "x", {"rules": "robbers", "seats": 2, "options": [1]}),
        CommandEntry(missing, "create", "y", {"rules": "robbers", "seats": 2, "seed": "zz"}),
    ]
    answers = await asyncio.gather(*(stack.requester.request(e, 10) for e in refused))
    for entry, answer in zip(refused, answers, strict=True):
        assert answer["status"] == "refused", (entry, answer)
        assert answer["code"] and answer["message"], answer
    codes = [answer["code"] for answer in answers]
    assert codes[:9] == ["bad_command"] * 9
    assert codes[9] == "not_your_turn"
    assert set(codes[16:21]) == {"game_not_started", "stale_timeout", "no_scores_yet"}
    assert codes[21:24] == ["bad_options"] * 3
    await game_log_intact(stack, game_id, version)
    assert (await stack.games.store.version(missing))[0] == 0
    assert missing not in await stack.games.store.list_games()
    # A refused create leaves no seed behind; a refused second create keeps the game's seed.
    assert await stack.client.get(stack.keys.seed(missing)) is None
    assert await stack.client.get(stack.keys.seed(game_id)) is not None
    assert await stack.client.xlen(stack.keys.dead_letters()) == 0
    assert await stack.until(lambda: _is_zero(pending(stack)))
    assert metric(stack.referee, "referee_commands_total", status="refused") == len(refused)
    # A made-up command type does not become a metric label of its own.
    kinds = {sample.labels["kind"] for sample in samples(stack.referee, "referee_commands_total")}
    assert kinds <= {
        "create",
        "sit",
        "start",
        "timeout",
        "continue",
        "draw",
        "play",
        "discard",
        "invalid",
    }, kinds
    assert stack.referee.running


@pytest.fixture
def poison(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Make the referee raise on every command of a game whose id starts with ``poison``."""
    calls: dict[str, int] = {}
    execute = Referee._execute

    async def failing(self: Referee, entry: CommandEntry, pipe: Any) -> Any:
        if entry.game.startswith("poison"):
            calls[entry.game] = calls.get(entry.game, 0) + 1
            raise RuntimeError("poisoned")
        return await execute(self, entry, pipe)

    monkeypatch.setattr(Referee, "_execute", failing)
    return calls


async def test_an_entry_that_keeps_failing_ends_in_the_dead_letters(
    stack: Stack, poison: dict[str, int]
) -> None:
    healthy = await create_game(stack.requester, "robbers-classic", 2)
    entry = CommandEntry("poison-1", "create", "create", {"rules": "robbers", "seats": 2})
    answer, driven = await asyncio.gather(
        stack.requester.request(entry, 20),
        drive(stack.requester, stack.games, healthy, ["greedy", "random"], until=_after(20)),
    )
    # The sender learns that its command failed (rather than waiting for its timeout).
    assert answer["status"] == "refused" and answer["code"] == "command_failed", answer
    max_deliveries = stack.settings.max_deliveries
    assert poison == {"poison-1": max_deliveries}
    letters = await dead_letters(stack)
    assert [letter["reason"] for letter in letters] == [b"failed too many times"]
    assert json.loads(letters[0]["entry"])["game"] == "poison-1"
    assert await stack.until(lambda: _is_zero(pending(stack)))
    assert metric(stack.referee, "referee_failures_total") == max_deliveries
    assert metric(stack.referee, "referee_claimed_total") >= max_deliveries
    assert metric(stack.referee, "referee_dead_letters_total", reason="failed too many times") == 1
    assert (await stack.games.store.version("poison-1"))[0] == 0
    # The other game went on meanwhile, and goes on.
    assert driven.commands > 0
    await drive(stack.requester, stack.games, healthy, ["greedy", "random"], until=_after(30))
    assert verify_chain(await stack.games.store.read(healthy)) is None
    assert stack.referee.running


def _after(version: int) -> Any:
    return lambda state: state.version >= version


async def _at_least(letters: Any, count: int) -> Any:
    found = await letters
    return found if len(found) >= count else None


async def _is_zero(count: Any) -> bool:
    return int(await count) == 0
