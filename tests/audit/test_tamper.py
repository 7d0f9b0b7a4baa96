"""Tampering: every way of editing a log is caught, and located, by both the audit of a stored
log (``audit_log`` with the store's head) and the verification of an exported record (the file's
text edited, then ``audit_record``)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from shared.audit.record import GameRecord, build_record, dumps, loads
from shared.audit.verify import Audit, Receipt, audit_log, audit_record
from shared.core.cards import JOKER
from shared.core.shuffle import commitment
from shared.infra.stored import StoredEvent
from tests.audit.games import Game, rechain, with_data


def _both(
    game: Game,
    events: list[StoredEvent],
    *,
    head: tuple[int, str] | None = None,
    receipts: tuple[Receipt, ...] = (),
) -> tuple[Audit, Audit]:
    """The audit of ``events`` as a store would hold them (with ``head``, default the original
    head: an operator editing Redis may not touch it) and the verification of a record of them
    (its head line the same ``head``), read back from its text."""
    original = (game.events[-1].version, game.events[-1].hash)
    claimed = head or original
    store = audit_log(events, game_id=game.game_id, head=claimed, receipts=receipts)
    honest = build_record(game.events, exported=0.0)
    record = GameRecord(honest.header, tuple(events), claimed)
    if head is not None:  # a careful forger also fixes the header's seed
        seeds = [e.data["seed"] for e in events if e.type == "SeedRevealed"]
        record = replace(record, header=replace(record.header, seed=seeds[-1] if seeds else None))
    verified = audit_record(loads(dumps(record)), receipts)
    return store, verified


def _caught(audits: tuple[Audit, Audit], check: str, version: int) -> None:
    for audit in audits:
        bad = audit.first_bad()
        assert not audit.ok and bad is not None, audit.to_json()
        assert (bad.check, bad.version) == (check, version), audit.to_json()
        assert f"version {version}" in bad.message or f"{version}:" in bad.message, bad.message


def _head(events: list[StoredEvent]) -> tuple[int, str]:
    return (events[-1].version, events[-1].hash)


def _index(game: Game, kind: str, nth: int = 0, **where: Any) -> int:
    found = [
        i
        for i, e in enumerate(game.events)
        if e.type == kind and all(e.data.get(k) == v for k, v in where.items())
    ]
    return found[nth]


def test_an_intact_log_passes_every_check(games: list[Game]) -> None:
    receipts = tuple(Receipt(e.version, e.hash) for e in games[0].events[::50])
    for game in games:
        for audit in _both(game, list(game.events), receipts=receipts if game is games[0] else ()):
            assert audit.ok, audit.to_json()
            assert {v.status for v in audit.verdicts} <= {"ok", "skipped"}
            assert audit.verdict("seed").status == "ok"


def test_a_live_game_is_not_yet_revealed(game: Game) -> None:
    end = _index(game, "ScoresRecorded")
    live = game.events[:end]
    audit = audit_log(live, head=_head(live))
    assert audit.ok and audit.verdict("seed").status == "pending"
    assert "not yet revealed" in audit.verdict("seed").message


def test_one_byte_changed_in_one_event(game: Game) -> None:
    i = _index(game, "CardDrawn", 3)
    version = game.events[i].version
    cards = list(game.events[i].data["cards"])
    cards[0] = cards[0] + 1 if cards[0] < JOKER - 1 else 0
    events = list(game.events)
    events[i] = with_data(events[i], cards=cards)
    store, _ = _both(game, events)
    _caught((store,), "chain", version)
    # In the file: one character of that event's line.
    lines = dumps(build_record(game.events, exported=0.0)).splitlines()
    line = lines[version]
    digit = next(k for k, c in enumerate(line) if c.isdigit() and line[k - 9 : k] == '"cards":[')
    lines[version] = line[:digit] + str((int(line[digit]) + 1) % 10) + line[digit + 1 :]
    _caught((audit_record(loads("\n".join(lines))),), "chain", version)


def test_an_event_deleted(game: Game) -> None:
    i = _index(game, "TurnPlayed", 2)
    events = game.events[:i] + game.events[i + 1 :]
    _caught(_both(game, events), "chain", game.events[i].version)


def test_the_last_event_deleted(game: Game) -> None:
    events = game.events[:-1]
    _caught(_both(game, events), "head", len(game.events))


def test_two_events_reordered(game: Game) -> None:
    i = _index(game, "CardDrawn", 5)
    events = list(game.events)
    events[i], events[i + 1] = events[i + 1], events[i]
    _caught(_both(game, events), "chain", game.events[i].version)
    # Reordered with their versions swapped too (so they stay contiguous):
    swapped = list(game.events)
    swapped[i] = replace(game.events[i + 1], version=game.events[i].version)
    swapped[i + 1] = replace(game.events[i], version=game.events[i + 1].version)
    _caught(_both(game, swapped), "chain", game.events[i].version)


def test_the_revealed_seed_swapped(game: Game, games: list[Game]) -> None:
    i = _index(game, "SeedRevealed")
    version = game.events[i].version
    other = games[1].seed.hex()
    events = list(game.events)
    events[i] = with_data(events[i], seed=other)
    store, verified = _both(game, events)
    _caught((store, verified), "chain", version)
    assert store.verdict("seed").failed and store.verdict("seed").version == version
    # With the chain recomputed the seed check alone catches it, at the reveal.
    forged = rechain(events, i)
    _caught(_both(game, forged, head=_head(forged)), "seed", version)


def test_the_seed_and_its_commitment_swapped_together(game: Game, games: list[Game]) -> None:
    """A forger who commits to another seed, reveals it and recomputes the chain is caught by
    the first shuffle that seed does not give."""
    other = games[1].seed
    events = [with_data(game.events[0], commitment=commitment(other)), *game.events[1:]]
    i = _index(game, "SeedRevealed")
    events[i] = with_data(events[i], seed=other.hex())
    forged = rechain(events)
    store, verified = _both(game, forged, head=_head(forged))
    starter = _index(game, "StarterChosen")
    _caught((store,), "seed", game.events[starter].version)
    bad = verified.first_bad()
    assert bad is not None and bad.check == "header" and bad.version == 1  # the header's commitment
    assert verified.verdict("seed").version == game.events[starter].version


def test_a_score_sheet_edited_and_the_chain_recomputed(game: Game) -> None:
    i = _index(game, "ScoresRecorded", 1)
    scores = list(game.events[i].data["scores"])
    scores[0] -= 5
    events = list(game.events)
    events[i] = with_data(events[i], scores=scores)
    forged = rechain(events, i)
    store, verified = _both(game, forged, head=_head(forged))
    _caught((store, verified), "scores", game.events[i].version)
    assert store.verdict("chain").status == "ok"


def test_the_match_result_edited_and_the_chain_recomputed(game: Game) -> None:
    i = _index(game, "MatchEnded")
    winners = [s for s in range(3) if s not in game.events[i].data["winners"]][:1]
    events = list(game.events)
    events[i] = with_data(events[i], winners=winners)
    forged = rechain(events, i)
    _caught(_both(game, forged, head=_head(forged)), "scores", game.events[i].version)


def test_a_rewritten_log_is_caught_only_by_a_receipt(game: Game) -> None:
    """The operator changes when a turn started and recomputes the chain from there: a history
    as consistent as the true one, so every check passes but a receipt a player kept."""
    i = _index(game, "TurnStarted", 40)
    events = list(game.events)
    events[i] = replace(events[i], time=events[i].time + 0.5, actor="service")
    forged = rechain(events, i)
    store, verified = _both(game, forged, head=_head(forged))
    assert store.ok and verified.ok, (store.to_json(), verified.to_json())
    before, after = game.events[i - 10], game.events[i + 30]
    receipts = (Receipt(before.version, before.hash), Receipt(after.version, after.hash))
    audits = _both(game, forged, head=_head(forged), receipts=receipts)
    _caught(audits, "receipts", after.version)
    message = audits[0].verdict("receipts").message
    assert f"versions {before.version + 1}-{after.version}" in message


def test_a_truncated_log_with_its_head_fixed_is_caught_by_a_receipt(game: Game) -> None:
    kept = game.events[-1]
    events = game.events[:-20]
    audits = _both(game, events, head=_head(events), receipts=(Receipt(kept.version, kept.hash),))
    _caught(audits, "receipts", kept.version)
    assert "removed" in audits[0].verdict("receipts").message


def test_a_forged_draw_with_the_chain_recomputed(game: Game) -> None:
    i = _index(game, "CardDrawn", 7, source="stock")
    drawn = game.events[i].data["cards"]
    other = next(c for c in range(JOKER) if c not in drawn)
    events = list(game.events)
    events[i] = with_data(events[i], cards=[other, *drawn[1:]])
    forged = rechain(events, i)
    audits = _both(game, forged, head=_head(forged))
    _caught(audits, "replay", game.events[i].version)
    assert "top of the stock" in audits[0].first_bad().message  # type: ignore[union-attr]


def test_a_stacked_deal_is_caught_by_the_seed(game: Game) -> None:
    """Two cards swapped between a hand and the stock: still one whole deck, only the seed
    shows the deal is not the shuffle's."""
    i = _index(game, "RoundDealt", 1)
    data = game.events[i].data
    hands = [list(h) for h in data["hands"]]
    stock = list(data["stock"])
    k = next(k for k, c in enumerate(stock) if c not in hands[0])
    hands[0][0], stock[k] = stock[k], hands[0][0]
    hands[0].sort()
    events = list(game.events)
    events[i] = with_data(events[i], hands=hands, stock=stock)
    forged = rechain(events, i)
    audits = _both(game, forged, head=_head(forged))
    # The hands no longer follow the recorded plays, so the replay may fail later; the first bad
    # event is the deal.
    _caught(audits, "seed", game.events[i].version)


def test_a_deleted_rejected_attempt_shows_in_its_penalty_draw(games: list[Game]) -> None:
    game = next(g for g in games if g.report.state.rules.name == "robbers")
    draw = next(
        i
        for i, e in enumerate(game.events)
        if e.type == "CardDrawn"
        and e.data["penalty"]
        and game.events[i - 1].type == "CommandRejected"
        and game.events[i - 2].type != "CommandRejected"
    )
    events = game.events[: draw - 1] + game.events[draw:]
    forged = rechain(events, draw - 1)
    audits = _both(game, forged, head=_head(forged))
    _caught(audits, "replay", draw)  # the draw now sits at the deleted attempt's version
    assert "failed-turn draw" in audits[0].first_bad().message  # type: ignore[union-attr]


def test_a_turn_given_to_the_wrong_seat(game: Game) -> None:
    i = _index(game, "TurnStarted", 12)
    seat = game.events[i].data["seat"]
    events = list(game.events)
    events[i] = with_data(events[i], seat=(seat + 1) % 3)
    forged = rechain(events, i)
    _caught(_both(game, forged, head=_head(forged)), "replay", game.events[i].version)


def test_an_accepted_play_that_is_illegal(game: Game) -> None:
    i = _index(game, "TurnPlayed", 4)
    layout = [list(m) for m in game.events[i].data["layout"]]
    layout[-1] = layout[-1][:2]  # a meld of two cards
    events = list(game.events)
    events[i] = with_data(events[i], layout=layout)
    forged = rechain(events, i)
    audits = _both(game, forged, head=_head(forged))
    _caught(audits, "replay", game.events[i].version)
    assert "illegal" in audits[0].first_bad().message  # type: ignore[union-attr]


def test_a_rejected_attempt_that_was_legal(games: list[Game]) -> None:
    """The layout of a rejected attempt replaced by the legal play the seat made right after it
    (same table, same hand): the rejection no longer re-judges illegal."""
    for game in games:
        pairs = [
            i
            for i, e in enumerate(game.events[:-1])
            if e.type == "CommandRejected"
            and game.events[i + 1].type == "TurnPlayed"
            and game.events[i + 1].data["seat"] == e.data["seat"]
        ]
        if pairs:
            break
    else:
        pytest.fail("no rejected attempt followed by a play")
    i = pairs[0]
    events = list(game.events)
    events[i] = with_data(events[i], layout=game.events[i + 1].data["layout"])
    forged = rechain(events, i)
    audits = _both(game, forged, head=_head(forged))
    _caught(audits, "replay", game.events[i].version)
    assert "is legal" in audits[0].first_bad().message  # type: ignore[union-attr]


def test_the_header_edited_in_a_record(game: Game) -> None:
    record = build_record(game.events, exported=0.0)
    lines = dumps(record).splitlines()
    header = json.loads(lines[0])
    header["players"][1] = "mallory"
    lines[0] = json.dumps(header)
    audit = audit_record(loads("\n".join(lines)))
    seated = _index(game, "PlayerSeated", 1)
    _caught((audit,), "header", game.events[seated].version)
    header["players"][1] = game.report.state.names[1]
    header["seed"] = "ab" * 32
    lines[0] = json.dumps(header)
    audit = audit_record(loads("\n".join(lines)))
    _caught((audit,), "header", game.events[_index(game, "SeedRevealed")].version)


@pytest.mark.parametrize("receipt", ["12", "12:zz", "0:" + "a" * 64, "x:" + "a" * 64, "3:abc"])
def test_a_malformed_receipt_is_refused(receipt: str) -> None:
    with pytest.raises(ValueError, match="VERSION:HASH"):
        Receipt.parse(receipt)


# --- a live game: every rule is checked with the seed still secret ------------------------------


def _live(game: Game) -> list[StoredEvent]:
    """The game's log as it stood before the match's end (no seed revealed yet)."""
    return game.events[: _index(game, "MatchEnded")]


def _live_audits(events: list[StoredEvent]) -> tuple[Audit, Audit]:
    """The audit of a live log as stored and the verification of its record."""
    store = audit_log(events, head=_head(events))
    return store, audit_record(loads(dumps(build_record(events, exported=0.0))))


def test_a_live_deal_that_is_not_one_deck(game: Game) -> None:
    i = _index(game, "RoundDealt", 1)
    data = game.events[i].data
    stock = list(data["stock"])
    stock[-1] = data["hands"][0][0]  # a card of seat 0's hand dealt a second time
    events = _live(game)
    events[i] = with_data(events[i], stock=stock)
    forged = rechain(events, i)
    audits = _live_audits(forged)
    _caught(audits, "replay", game.events[i].version)
    assert "not one whole deck" in audits[0].first_bad().message  # type: ignore[union-attr]


def test_a_stacked_stock_waits_for_the_seed(games: list[Game]) -> None:
    """Two cards swapped deep in a round's stock, where no draw reached them: a deal the rules
    could have made, so the live game audits clean (seed pending); once the seed is revealed,
    the seed check finds the deal is not the shuffle's."""

    def untouched(game: Game, i: int) -> int:
        """How many cards at the bottom of the stock dealt at ``i`` no draw reached."""
        end = next(k for k in range(i, len(game.events)) if game.events[k].type == "RoundEnded")
        drawn = sum(len(e.data["cards"]) for e in game.events[i:end] if e.type == "CardDrawn")
        reshuffled = any(e.type == "StockReshuffled" for e in game.events[i:end])
        return 0 if reshuffled else len(game.events[i].data["stock"]) - drawn

    game, i = next(
        (g, i)
        for g in games
        for i, e in enumerate(g.events)
        if e.type == "RoundDealt"
        and untouched(g, i) > 2
        and e.data["stock"][-1] != e.data["stock"][-2]
    )
    stock = list(game.events[i].data["stock"])
    stock[-1], stock[-2] = stock[-2], stock[-1]
    events = list(game.events)
    events[i] = with_data(events[i], stock=stock)
    forged = rechain(events, i)
    live = forged[: _index(game, "MatchEnded")]
    for audit in _live_audits(live):
        assert audit.ok and audit.verdict("seed").status == "pending", audit.to_json()
    _caught(_both(game, forged, head=_head(forged)), "seed", game.events[i].version)


def test_a_live_reshuffle_that_is_not_the_pile(pile_game: Game) -> None:
    i = _index(pile_game, "StockReshuffled")
    stock = list(pile_game.events[i].data["stock"])
    hand = next(c for c in range(JOKER) if stock.count(c) < 2 and c != stock[-1])
    stock[-1] = hand  # the last card of the refill is not the pile's
    events = _live(pile_game)
    events[i] = with_data(events[i], stock=stock)
    forged = rechain(events, i)
    audits = _live_audits(forged)
    _caught(audits, "replay", pile_game.events[i].version)
    assert "not the pile under its top card" in audits[0].first_bad().message  # type: ignore[union-attr]


def test_a_live_round_started_by_the_wrong_seat(game: Game) -> None:
    i = _index(game, "RoundDealt", 1) + 1
    assert game.events[i].type == "TurnStarted"
    seat = game.events[i].data["seat"]
    events = _live(game)
    events[i] = with_data(events[i], seat=(seat + 1) % 3)
    forged = rechain(events, i)
    audits = _live_audits(forged)
    _caught(audits, "replay", game.events[i].version)
    assert "goes to seat" in audits[0].first_bad().message  # type: ignore[union-attr]


def test_a_live_dealer_the_cuts_do_not_give(game: Game) -> None:
    """The cut's winner swapped for another seat, with the deal and first turn forged to match:
    the recorded cuts themselves say who deals, so the forgery is caught at the cut, before the
    seed is revealed."""
    i = _index(game, "StarterChosen")
    chosen = game.events[i].data
    dealer = (chosen["dealer"] + 1) % 3
    starter = (dealer + 1) % 3
    events = _live(game)
    events[i] = with_data(events[i], dealer=dealer, starter=starter)
    events[i + 1] = with_data(events[i + 1], dealer=dealer, starter=starter)
    assert events[i + 2].type == "TurnStarted"
    events[i + 2] = with_data(events[i + 2], seat=starter)
    forged = rechain(events, i)
    audits = _live_audits(forged)
    _caught(audits, "replay", game.events[i].version)
    assert "StarterChosen" in audits[0].first_bad().message  # type: ignore[union-attr]
