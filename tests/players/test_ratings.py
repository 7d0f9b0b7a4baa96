"""Ratings: the update is the library's (known cases), the fold is the same in any order of
arrival, a name takes nobody's rating (guests are unrated; accounts count by id), bots are rated
apart, and a rebuild from the logs gives the ratings the live projection holds."""

from __future__ import annotations

import hashlib
import random

import pytest
from openskill.models import PlackettLuce

from shared.infra import codec
from shared.infra.chain import sealed_chain
from shared.infra.gamelog import to_new
from shared.infra.ratings import RESULT_TYPES, Entrant, GameResult, fold, result_of, update
from shared.infra.stored import GENESIS_HASH, NewEvent, StoredEvent
from shared.play.bots import GreedyBot, RandomBot
from shared.play.selfplay import SelfPlay


def test_a_two_player_game_moves_as_the_library_says() -> None:
    model = PlackettLuce()
    after = update(
        model, [(25.0, 25 / 3), (25.0, 25 / 3)], [Entrant("a", 0, True), Entrant("b", 1, False)]
    )
    assert after[0] == pytest.approx((27.635389493140497, 8.06590141354368), abs=1e-12)
    assert after[1] == pytest.approx((22.364610506859503, 8.06590141354368), abs=1e-12)


def test_an_upset_moves_as_the_library_says() -> None:
    model = PlackettLuce()
    after = update(
        model, [(30.0, 4.0), (20.0, 6.0)], [Entrant("a", 0, False), Entrant("b", 1, True)]
    )
    assert after[0] == pytest.approx((28.719014522273632, 3.9706488720194377), abs=1e-12)
    assert after[1] == pytest.approx((22.881522647293373, 5.846261456082412), abs=1e-12)


def test_the_losers_of_a_three_seat_game_share_second_place() -> None:
    model = PlackettLuce()
    entrants = [Entrant("a", 0, True), Entrant("b", 1, False), Entrant("c", 2, False)]
    after = update(model, [(25.0, 25 / 3)] * 3, entrants)
    assert after[0] == pytest.approx((27.869048680749426, 8.205243377397993), abs=1e-12)
    assert after[1] == after[2] == pytest.approx((23.565475659625285, 8.058224222802378), abs=1e-12)


def _results(count: int) -> list[GameResult]:
    rng = random.Random(7)
    people = ["p1", "p2", "p3", "bot:greedy", "bot:random"]
    out = []
    for n in range(count):
        chosen = rng.sample(people, rng.choice([2, 3]))
        winner = rng.randrange(len(chosen))
        entrants = tuple(Entrant(who, seat, seat == winner) for seat, who in enumerate(chosen))
        out.append(
            GameResult(f"g{n:03}", rng.choice(["robbers", "rummikub"]), 1000.0 + n, entrants)
        )
    return out


def test_the_fold_is_the_same_whatever_order_results_arrive_in() -> None:
    results = _results(40)
    table = fold(results)
    shuffled = list(results)
    random.Random(3).shuffle(shuffled)
    assert fold(shuffled) == table
    assert table["robbers"]["p1"]["games"] + table["rummikub"]["p1"]["games"] == sum(
        1 for r in results for e in r.entrants if e.who == "p1"
    )
    # A rating's history has a point per rated game and ends at its rating.
    p1 = table["robbers"]["p1"]
    assert len(p1["history"]) == p1["rated_games"] and p1["history"][-1][2] == pytest.approx(
        p1["rating"]
    )


def _stored(
    game_id: str, version: int, kind: str, data: dict[str, object], at: float = 0.0
) -> StoredEvent:
    return StoredEvent(game_id, version, kind, 1, at, None, None, data, "", "")


def test_a_name_takes_nobodys_rating() -> None:
    """A guest who types an account's name is a guest: unrated, and the account's figures are
    untouched."""
    events = [
        _stored("g1", 1, "GameCreated", {"rules": "robbers"}),
        _stored("g1", 2, "PlayerSeated", {"seat": 0, "name": "Alice", "seed": ""}),
        _stored(
            "g1", 3, "PlayerSeated", {"seat": 1, "name": "Bob", "seed": "", "player": "bob-id"}
        ),
        _stored(
            "g1", 4, "MatchEnded", {"winners": [0], "totals": None, "outs": [], "wins": []}, 5.0
        ),
    ]
    result = result_of("g1", events)
    assert result is not None and result.entrants == (Entrant("bob-id", 1, False),)
    table = fold([result])
    assert set(table["robbers"]) == {"bob-id"}  # no "Alice" entry, and no rating change alone
    assert table["robbers"]["bob-id"]["rated_games"] == 0


def test_seats_left_and_bots_are_read_from_the_log() -> None:
    events = [
        _stored("g2", 1, "GameCreated", {"rules": "rummikub"}),
        _stored("g2", 2, "PlayerSeated", {"seat": 0, "name": "x", "seed": "", "player": "gone"}),
        _stored("g2", 3, "SeatLeft", {"seat": 0}),
        _stored("g2", 4, "PlayerSeated", {"seat": 0, "name": "y", "seed": "", "player": "kept"}),
        _stored(
            "g2", 5, "PlayerSeated", {"seat": 1, "name": "greedy bot", "seed": "", "bot": "greedy"}
        ),
        _stored(
            "g2", 6, "MatchEnded", {"winners": [1], "totals": None, "outs": [], "wins": []}, 9.0
        ),
    ]
    result = result_of("g2", events)
    assert result == GameResult(
        "g2", "rummikub", 9.0, (Entrant("kept", 0, False), Entrant("bot:greedy", 1, True))
    )
    assert result_of("g2", events[:-1]) is None


def test_a_finished_games_result_decodes_only_the_records_it_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Scoring rates a finished game from the few events of its log the result reads, decoding
    those records alone; the result is the one the whole log gives. A record that merely holds
    such a type's name in its data is decoded and passed over."""
    seed = hashlib.sha256(b"ratings/decode").digest()
    played = SelfPlay("robbers", {}, [GreedyBot(), RandomBot()], seed, random.Random(5)).play()
    new = [to_new(e, None) for e in played.events]
    new.insert(5, NewEvent("TurnPlayed", {"note": "MatchEnded", "seat": 0}))  # a false alarm
    _, sealed = sealed_chain("g9", new, 1, GENESIS_HASH, "c", 1.0, b"k" * 32)
    records = [s.record for s in sealed]
    assert len(records) > 100
    whole = [codec.decode(r) for r in records]

    decoded: list[bytes] = []
    plain = codec.decode

    def counted(raw: bytes, upcasters: codec.Upcasters = codec.UPCASTERS) -> StoredEvent:
        decoded.append(raw)
        return plain(raw, upcasters)

    monkeypatch.setattr(codec, "decode", counted)
    kept = codec.decode_of_types(records, RESULT_TYPES)
    assert kept == [e for e in whole if e.type in RESULT_TYPES]
    assert [e.type for e in kept].count("MatchEnded") == 1
    assert len(decoded) == len(kept) + 1  # the false alarm, decoded and passed over
    found = result_of("g9", kept)
    assert found is not None and found == result_of("g9", whole)
