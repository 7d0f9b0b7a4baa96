"""Nothing leaks by the ways out of a live game's log other than its views: over the self-played
games of every rule set (the pile variant, rummikub, robbers-classic...), no replay (its
snapshots, its commands' events, moves and verdicts, its diff) and no page of the gateway's event
feed shows a seat or a spectator a card another hand or the stock holds, the stock's order, or
the seed, checked against the state's truth; one declaration hides a field on every path; the
record is only for a sight that sees everything."""

from __future__ import annotations

import itertools
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from services.gateway.state import event_for
from shared.audit.record import NotFinished, build_record
from shared.audit.replay import SPECTATOR, Timeline, replay, timeline
from shared.core.cards import deck
from shared.core.events import CardDiscarded, Event, RoundDealt, TurnStarted
from shared.core.shuffle import shuffle_key
from shared.core.visibility import EVERYONE, SEAT_ONLY, Sight
from shared.infra.chain import chain, compute_hash
from shared.infra.stored import GENESIS_HASH, NewEvent, StoredEvent
from tests.audit.games import Game
from tests.secrecy import (
    assert_each_within,
    assert_fields_within,
    assert_no_stock_order,
    assert_no_text,
    assert_within,
    visible,
)

ENVELOPE = ("version", "time", "hash")


def _secrets(game: Game, line: Timeline, seat: int | None) -> list[str]:
    """The texts no live output may show ``seat``: the seed, the shuffle key, other seeds."""
    final = line.final
    key = shuffle_key(game.seed, line.game_id, list(final.seeds))
    others = [seed for s, seed in enumerate(final.seeds) if s != seat]
    return [game.seed.hex(), key.hex(), *others]


def _prefix(line: Timeline, cut: int) -> Timeline:
    """The game as it stood after its first ``cut`` events."""
    turns = {n: i for n, i in line.turn_index().items() if i < cut}
    return Timeline(
        line.game_id, line.stored[:cut], line.events[:cut], line.states[: cut + 1], turns
    )


def _turn_ends(line: Timeline) -> Iterator[tuple[int, int]]:
    """(turn number, number of events up to its end, the next turn's start included)."""
    for number, start in line.turn_index().items():
        end = start + 1
        while end < len(line.events) and not isinstance(line.events[end], TurnStarted | RoundDealt):
            end += 1
        yield number, min(end + 1, len(line.events))


class Truth:
    """What each viewer may know of at each version of one game (worked out once)."""

    def __init__(self, line: Timeline) -> None:
        self.line = line
        self.known: dict[tuple[int, int | None], Counter[str]] = {}

    def visible(self, version: int, seat: int | None) -> Counter[str]:
        key = (version, seat)
        if key not in self.known:
            self.known[key] = visible(self.line.states[version], seat)
        return self.known[key]

    def around(self, index: int, seat: int | None) -> Counter[str]:
        """What ``seat`` may know of while event ``index`` happens (see ``secrecy.around``)."""
        if isinstance(self.line.events[index], RoundDealt):
            return self.visible(index + 1, seat)
        return self.visible(index, seat) | self.visible(index + 1, seat)

    def span(self, first: int, last: int, seat: int | None) -> Counter[str]:
        """What ``seat`` may know of over versions ``first..last`` (from a deal on, its cards)."""
        start = first - 1
        for index in range(first - 1, last):
            if isinstance(self.line.events[index], RoundDealt):
                start = index + 1
        allowed: Counter[str] = Counter()
        for version in range(start, last + 1):
            allowed |= self.visible(version, seat)
        return allowed


def check_replay(
    truth: Truth, result: dict[str, Any], seat: int | None, secrets: list[str]
) -> None:
    """One live replay as ``seat`` (None: a spectator) got it, against the truth."""
    line = truth.line
    where = (line.game_id, result["turn"], seat)
    for side in ("before", "after"):
        snap = result[side]
        state = line.states[snap["version"]]
        assert_within(snap, truth.visible(snap["version"], seat), (where, side))
        assert_no_stock_order(snap, [state.stock], (where, side))
    first, last = result["versions"]
    for command in result["commands"]:
        for shown in command["events"]:
            index = shown["version"] - 1
            event: Event = line.events[index]
            allowed = truth.around(index, seat)
            data = {k: v for k, v in shown.items() if k != "version"}
            assert_fields_within(data, allowed, (where, event.TYPE))
            stocks = [line.states[index].stock, line.states[index + 1].stock]
            assert_no_stock_order(data, stocks, (where, event.TYPE))
        a, b = command["versions"]
        allowed = truth.span(a, b, seat)
        for name in ("moves", "verdict", "recorded", "layout"):
            assert_each_within(command.get(name), allowed, (where, command["kind"], name))
        if command["seat"] != seat:
            assert command["command_id"] is None, (where, command)
    assert_each_within(result["diff"], truth.span(first, last, seat), (where, "diff"))
    assert_no_text(result, secrets, where)


def test_no_live_replay_shows_a_hidden_card(games: list[Game]) -> None:
    """Every fourth turn of every game (a different fourth in each), replayed right after it for
    every seat and a spectator, while the game was still live."""
    checked = Counter[str]()
    for number_of_game, game in enumerate(games):
        line = timeline(game.events)
        truth = Truth(line)
        seats = line.final.seats
        for number, cut in _turn_ends(line):
            if number % 4 != number_of_game % 4:
                continue
            prefix = _prefix(line, cut)
            if prefix.final.status == "finished":
                continue
            for viewer in (*range(seats), SPECTATOR):
                seat = viewer if isinstance(viewer, int) else None
                result = replay(game.events[:cut], turn=number, viewer=viewer, line=prefix)
                assert result["viewer"] == viewer
                check_replay(truth, result, seat, _secrets(game, line, seat))
                checked.update(e["type"] for c in result["commands"] for e in c["events"])
    assert {"CardDrawn", "CommandRejected", "StockReshuffled", "TurnPlayed"} <= set(checked)


def test_no_feed_page_shows_a_hidden_card(games: list[Game]) -> None:
    """Every event of a game of each configuration as the gateway's feed (``GET /events``, a
    socket's catch-up) gives it to each seat and a spectator while the game is live."""
    for game in games[::2]:
        line = timeline(game.events)
        truth = Truth(line)
        viewers = (*range(line.final.seats), None)
        secrets = {viewer: _secrets(game, line, viewer) for viewer in viewers}
        for index, stored in enumerate(game.events):
            before, after = line.states[index], line.states[index + 1]
            if after.status == "finished":
                break
            for viewer in viewers:
                shown = event_for(stored, viewer, False)
                assert [shown[k] for k in ENVELOPE] == [stored.version, stored.time, stored.hash]
                data = {k: v for k, v in shown.items() if k not in ENVELOPE}
                where = (game.game_id, stored.version, viewer)
                assert_fields_within(data, truth.around(index, viewer), where)
                assert_no_stock_order(data, [before.stock, after.stock], where)
                assert_no_text(data, secrets[viewer], where)


def test_one_declaration_hides_a_field_on_every_path(
    pile_game: Game, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Declare a discarded card its seat's own (it is public) and the event's JSON, the feed and
    the replay's events and moves all hide it from the others, none of them changed."""
    monkeypatch.setattr(CardDiscarded, "SEEN", {**CardDiscarded.SEEN, "card": SEAT_ONLY})
    line = timeline(pile_game.events)
    index = next(i for i, e in enumerate(line.events) if isinstance(e, CardDiscarded))
    discard = line.events[index]
    assert isinstance(discard, CardDiscarded)
    other = (discard.seat + 1) % line.final.seats
    stored = pile_game.events[index]
    assert event_for(stored, other, False)["card"] is None
    assert event_for(stored, discard.seat, False)["card"] is not None
    cut = index + 1
    result = replay(pile_game.events[:cut], version=stored.version, viewer=other)
    (command,) = result["commands"]
    (shown,) = [e for e in command["events"] if e["type"] == "CardDiscarded"]
    assert shown["card"] is None
    assert [m["cards"] for m in command["moves"]] == [1]
    own = replay(pile_game.events[:cut], version=stored.version, viewer=discard.seat)
    assert own["commands"][0]["moves"][0]["cards"] != 1


def test_a_record_is_for_a_sight_that_sees_everything(game: Game) -> None:
    """A live game's record (every hand, the stock order) only for the operator; a finished
    game's for anyone."""
    live = game.events[: len(game.events) // 2]
    for sight in (Sight(0), Sight(1), Sight(None)):
        with pytest.raises(NotFinished, match="once the game has ended"):
            build_record(live, sight=sight)
        assert build_record(game.events, exported=0.0, sight=sight).events
    assert build_record(live, exported=0.0, sight=EVERYONE).events
    assert build_record(live, exported=0.0).events  # the store's own tools see everything


def test_a_live_replay_hides_the_ids_of_other_seats_commands(game: Game) -> None:
    """With a command's id (and the time, and the chain's hashes) another seat could test
    guesses at the cards hidden in its events, so only its seat sees it while the game is live."""
    line = timeline(game.events)
    number, cut = next((n, c) for n, c in _turn_ends(line) if n > 10)
    result = replay(game.events[:cut], turn=number, viewer=SPECTATOR, line=_prefix(line, cut))
    assert result["commands"]
    assert all(c["command_id"] is None for c in result["commands"])
    own = replay(game.events[:cut], turn=number, viewer=result["seat"], line=_prefix(line, cut))
    assert any(c["command_id"] is not None for c in own["commands"] if c["seat"] == own["seat"])
    after = replay(game.events, turn=number, viewer=SPECTATOR, line=line)
    assert all(c["command_id"] is not None for c in after["commands"])


def _as_served(game: Game, salted: bool = True) -> list[StoredEvent]:
    """The game's log with the envelopes the services write: a timeout's command id and actor
    are the referee's (``timeout:<turn>``, ``timeout``), a seat's command id is random, and the
    referee salts every event with the game's seed (``test_timers`` checks that it does);
    ``salted`` False: as logs were before salts."""
    out: list[StoredEvent] = []
    head = GENESIS_HASH
    stored = game.events
    index = 0
    while index < len(stored):
        first = stored[index]
        end = index + 1
        while end < len(stored) and (stored[end].command_id, stored[end].time) == (
            first.command_id,
            first.time,
        ):
            end += 1
        if first.type == "TurnTimedOut":
            command_id, actor = f"timeout:{first.data['number']}", "timeout"
        else:
            command_id, actor = uuid.uuid4().hex, None
        new = [NewEvent(e.type, e.data, e.schema, actor or e.actor) for e in stored[index:end]]
        key = game.seed if salted else None
        out += chain(game.game_id, new, len(out) + 1, head, command_id, first.time, key)
        head = out[-1].hash
        index = end
    return out


def _guess_timeout_draws(game: Game, salted: bool) -> tuple[int, int]:
    """Another seat's failed-turn draws after timeouts (up to 5), guessed card by card against
    the hash the feed shows with the envelope everyone can rebuild: (tried, recovered)."""
    served = _as_served(game, salted)
    line = timeline(served)
    kinds = sorted(set(deck(line.final.rules.jokers)))
    tried = recovered = 0
    for index, stored in enumerate(served):
        if stored.type != "CardDrawn" or served[index - 1].type != "TurnTimedOut":
            continue
        viewer = (stored.data["seat"] + 1) % line.final.seats
        shown = event_for(stored, viewer, False)
        timed_out = event_for(served[index - 1], viewer, False)
        assert isinstance(shown["cards"], int)
        assert "salt" not in shown and "salt" not in timed_out
        tried += 1
        for cards in itertools.product(kinds, repeat=shown["cards"]):
            data = {k: shown[k] for k in ("seat", "source", "penalty")} | {"cards": list(cards)}
            envelope = {
                "game_id": game.game_id,
                "version": shown["version"],
                "type": "CardDrawn",
                "schema": 1,
                "time": shown["time"],
                "command_id": f"timeout:{timed_out['number']}",
                "actor": "timeout",
                "data": data,
                "prev_hash": timed_out["hash"],
            }
            if compute_hash(envelope) == shown["hash"]:
                recovered += 1
                break
        if tried == 5:
            break
    return tried, recovered


def _timed_out_game(games: list[Game]) -> Game:
    return next(
        g for g in games if g.report.state.rules.failed_turn_draw == 2 and g.report.timeouts
    )


def test_an_unsalted_timeouts_draw_is_recovered_from_the_feeds_hashes(games: list[Game]) -> None:
    """The attack the salt stops is real: without it every guessed draw is found."""
    tried, recovered = _guess_timeout_draws(_timed_out_game(games), salted=False)
    assert tried > 0 and recovered == tried


def test_a_timeouts_draw_cannot_be_recovered_from_the_feeds_hashes(games: list[Game]) -> None:
    """With the events salted by the secret seed, no guess matches."""
    tried, recovered = _guess_timeout_draws(_timed_out_game(games), salted=True)
    assert tried > 0
    assert recovered == 0, f"{recovered} of {tried} hidden draws recovered"
