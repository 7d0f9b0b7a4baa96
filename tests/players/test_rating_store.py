"""The ratings read model scales with a site: a result in order folds one game's worth on from
the stored state, a late one folds from the checkpoint at its place, and whatever order results
arrive in among the checkpoints, the store holds what a whole fold gives, float for float, as a
rebuild does. It holds the results of its checkpoints alone, so it does not grow with the games
played: one older than every checkpoint is not counted live (it is reported) and a rebuild
counts it in its place. Two processes racing never write an older fold over a newer one. A
board page reads that page, a player page that entrant."""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.scoring.scoring import Scoring
from shared.infra import ratings as module
from shared.infra.ratings import Entrant, GameResult, Ratings, fold
from shared.infra.settings import Settings
from tests.players.conftest import Counted
from tests.services.conftest import delete_prefixed, redis_client

KEPT = 8  # checkpoints kept in these tests


@pytest.fixture
async def client() -> AsyncIterator[Counted]:
    """The test's Redis, its keys under a prefix of its own (``client.prefix``)."""
    redis = redis_client()
    prefix = f"wt-ratings:{uuid.uuid4().hex[:8]}:"
    try:
        yield Counted(redis, prefix)
    finally:
        await delete_prefixed(redis, prefix)
        await redis.aclose()


def _store(client: Counted) -> Ratings:
    return Ratings(client, client.prefix, checkpoints=KEPT)


def _results(count: int, seed: int = 7) -> list[GameResult]:
    """Results in the order they ended: two rule sets, accounts and bots, games of two or
    three (losers tied), some unrated (one entrant), some ending at the same time."""
    rng = random.Random(seed)
    people = [f"p{n}" for n in range(6)] + ["bot:greedy", "bot:random"]
    out = []
    finished = 1000.0
    for n in range(count):
        chosen = rng.sample(people, rng.choice([1, 2, 3, 3]))
        winner = rng.randrange(len(chosen))
        entrants = tuple(Entrant(who, seat, seat == winner) for seat, who in enumerate(chosen))
        finished += rng.choice([0.0, 0.25, 1.5])
        rules = rng.choice(["robbers", "robbers", "rummikub"])
        out.append(GameResult(f"g{rng.randrange(10**6):06}n{n}", rules, finished, entrants))
    return out


def _count_updates(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    real = module.update

    def counted(*args: Any) -> Any:
        calls[0] += 1
        return real(*args)

    monkeypatch.setattr(module, "update", counted)
    return calls


async def _held(client: Counted, ratings: Ratings) -> dict[str, Any]:
    """Everything the read model holds, key by key."""
    out: dict[str, Any] = {"results": await client.hgetall(ratings.results_key)}
    for rules in ("robbers", "rummikub"):
        out[f"{rules}:horizon"] = await client.get(ratings.key(rules, "horizon"))
        for part in ("checkpoints", "figures", "pages"):
            out[f"{rules}:{part}"] = await client.hgetall(ratings.key(rules, part))
        for part in ("window", "board:players", "board:bots"):
            key = ratings.key(rules, part)
            out[f"{rules}:{part}"] = await client.zrange(key, 0, -1, withscores=True)
    return out


async def _windows(client: Counted, ratings: Ratings) -> set[bytes]:
    """The games of every rule set's checkpoints."""
    held: set[bytes] = set()
    for rules in ("robbers", "rummikub"):
        held |= set(await client.zrange(ratings.key(rules, "window"), 0, -1))
    return held


async def test_results_in_any_order_hold_what_a_whole_fold_gives(client: Counted) -> None:
    """In order, a little late, ahead of their time, redelivered (long after, too): after each,
    the table is the whole fold's and the results held are the checkpoints'; at the end every
    key is what a rebuild writes."""
    results = _results(70)
    arrival = list(results)
    rng = random.Random(11)
    for start in range(0, 60, 6):  # a little late: shuffled among their neighbours
        chunk = arrival[start : start + 6]
        rng.shuffle(chunk)
        arrival[start : start + 6] = chunk
    arrival.insert(40, arrival.pop(55))  # ahead of its time: the others fold in late after it
    ratings = _store(client)
    seen: list[GameResult] = []
    for result in arrival:
        assert await ratings.record(result) is bool(result.entrants)
        seen.append(result)
        assert await ratings.table() == fold(seen), result.game_id
        again = rng.choice(seen)
        assert await ratings.record(again) is False  # a redelivery counts once
        held = set(await client.hgetall(ratings.results_key))
        assert held == await _windows(client, ratings)
    assert await ratings.table() == fold(results)
    assert len(await client.hgetall(ratings.results_key)) == 2 * KEPT
    live = await _held(client, ratings)
    await ratings.drop()
    assert await ratings.table() == {}
    for result in results:
        await ratings.record(result, refold=False)
    await ratings.refold()
    assert await _held(client, ratings) == live  # checkpoints and boards too


async def test_results_held_without_their_fold_are_folded_with_the_next(client: Counted) -> None:
    """Results kept with no fold of their rule set beside them (a layout that kept one whole
    table, a rebuild cut short) are folded, all of them, with the rule set's next result."""
    results = sorted(_results(30), key=lambda r: r.position)
    ratings = _store(client)
    for result in results[:-1]:
        await ratings.record(result, refold=False)
    last = results[-1]
    await ratings.record(last)
    mine = [r for r in results if r.rules == last.rules]
    assert await ratings.table() == fold(mine)  # the other rule set waits for its next
    # Its results past the checkpoints are let go; the newest of them is its horizon.
    held = set(await client.hgetall(ratings.results_key))
    others = {r.game_id.encode() for r in results[:-1] if r.rules != last.rules and r.entrants}
    kept = [r for r in mine if r.entrants][-KEPT:]
    assert held == others | {r.game_id.encode() for r in kept}
    gone = [r for r in mine if r.entrants][-KEPT - 1]
    horizon = await client.get(ratings.key(last.rules, "horizon"))
    assert horizon == f"{gone.finished!r} {gone.game_id}".encode()


async def test_a_result_in_order_folds_one_games_worth(
    client: Counted, monkeypatch: pytest.MonkeyPatch
) -> None:
    rated = [r for r in _results(60) if r.rules == "robbers" and len(r.entrants) >= 2]
    results = sorted(rated, key=lambda r: r.position)
    ratings = _store(client)
    for result in results[:-1]:
        await ratings.record(result)
    updates = _count_updates(monkeypatch)
    counted = Counted(client.client, client.prefix)
    ratings = _store(counted)
    await ratings.record(results[-1])
    assert updates == [1]  # the one game, on from its entrants' figures
    assert "hgetall" not in counted.commands  # no other result read
    assert await ratings.table() == fold(results)


async def test_a_late_result_folds_from_the_checkpoint_at_its_place_an_older_one_waits(
    client: Counted, monkeypatch: pytest.MonkeyPatch
) -> None:
    rated = [r for r in _results(80) if r.rules == "robbers" and len(r.entrants) >= 2]
    results = sorted(rated, key=lambda r: r.position)
    late, early = results.pop(-4), results.pop(len(results) // 2)
    ratings = _store(client)
    for result in results:
        await ratings.record(result)
    updates = _count_updates(monkeypatch)
    counted = Counted(client.client, client.prefix)
    ratings = _store(counted)
    await ratings.record(late)  # three results ended after it
    assert updates == [1 + 3]  # it, and the three after it again
    assert "hgetall" not in counted.commands
    assert await ratings.table() == fold([*results, late])
    updates[0] = 0
    told: list[GameResult] = []
    ratings.on_late = told.append
    assert await ratings.record(early) is False  # older than every checkpoint: not counted
    assert updates == [0] and told == [early]
    assert await ratings.table() == fold([*results, late])
    await ratings.drop()  # a rebuild counts it in its place
    for result in [*results, late, early]:
        await ratings.record(result, refold=False)
    await ratings.refold()
    assert await ratings.table() == fold([*results, late, early])
    assert len(await client.hgetall(ratings.results_key)) == KEPT


async def test_a_fold_overtaken_by_another_process_folds_again(client: Counted) -> None:
    """Process A reads, B writes a newer fold, A's write is refused and A folds again on
    from B's: both results count, as a whole fold counts them."""
    results = [r for r in _results(20) if r.rules == "robbers" and len(r.entrants) >= 2]
    first, a_result, b_result = results[:-2], results[-1], results[-2]
    a, b = _store(client), _store(client)
    for result in first:
        await a.record(result)
    real = a._fold
    outcomes: list[int] = []

    async def overtaken(**kwargs: Any) -> Any:
        if not outcomes:
            await b.record(b_result)  # B writes between A's read and A's write
        outcome = await real(**kwargs)
        outcomes.append(int(outcome))
        return outcome

    a._fold = overtaken  # type: ignore[assignment]
    assert await a.record(a_result) is True
    assert outcomes == [-1, 1]
    assert await a.table() == fold(results)


def _tied_results() -> list[GameResult]:
    """Many entrants, with exact ties: losers sharing a place, and accounts who played only
    unrated games (rating 0) with different numbers of games."""
    out = []
    for n in range(40):
        trio = (f"bot:b{n % 13:02}", f"bot:c{(n * 7) % 11:02}", f"bot:d{n % 5}")
        entrants = tuple(Entrant(who, seat, seat == 0) for seat, who in enumerate(trio))
        out.append(GameResult(f"t{n:03}", "robbers", 5000.0 + n, entrants))
    for n in range(12):
        alone = (Entrant(f"acct{n % 4}", 0, n % 2 == 0),)
        out.append(GameResult(f"u{n:03}", "robbers", 6000.0 + n, alone))
    return out


def _expected_board(results: list[GameResult], bots: bool, limit: int) -> list[tuple[str, Any]]:
    table = fold(results)["robbers"]
    held = [(w, f) for w, f in table.items() if w.startswith("bot:") == bots]
    held.sort(key=lambda item: (-item[1]["rating"], -item[1]["games"], item[0]))
    return held[:limit]


async def test_a_board_page_reads_that_page_only(client: Counted) -> None:
    results = _tied_results()
    ratings = _store(client)
    for result in results:
        await ratings.record(result)
    counted = Counted(client.client, client.prefix)
    reader = _store(counted)
    for bots, limit in ((True, 5), (True, 200), (False, 3), (False, 50)):
        page = await reader.board("robbers", bots=bots, limit=limit)
        expected = _expected_board(results, bots, limit)
        assert [w for w, _ in page] == [w for w, _ in expected]
        assert [(s.rating, s.mu, s.sigma, s.games, s.wins) for _, s in page] == [
            (f["rating"], f["mu"], f["sigma"], f["games"], f["wins"]) for _, f in expected
        ]
    counted.commands.clear()
    counted.replies.clear()
    page = await reader.board("robbers", bots=True, limit=4)
    assert counted.commands == ["zrange", "hmget"]  # no whole hash, no whole table
    everyone = set(fold(results)["robbers"])
    read = {w for w in everyone if any(counted.mention(w, r) for r in counted.replies)}
    assert read == {w for w, _ in page} and len(read) == 4
    # A player's page and a registration read that entrant's entries alone.
    counted.commands.clear()
    counted.replies.clear()
    assert await reader.entrant("acct1") == {"robbers": fold(results)["robbers"]["acct1"]}
    assert await reader.standing("rummikub", "acct1") is None
    assert "hgetall" not in counted.commands
    assert not any("bot:" in r for r in counted.replies)


async def test_scoring_counts_and_logs_a_result_too_late_to_rate(
    client: Counted, capsys: pytest.CaptureFixture[str]
) -> None:
    scoring = Scoring(client.client, Settings(prefix=client.prefix))
    ratings = scoring.projections.ratings
    ratings.checkpoints = 1
    older, newer, newest = sorted(
        (r for r in _results(30) if r.rules == "robbers" and len(r.entrants) >= 2),
        key=lambda r: r.position,
    )[:3]
    assert await ratings.record(older) and await ratings.record(newest)  # older is let go
    assert await ratings.record(newer) is False
    assert scoring.registry.get_sample_value("scoring_results_too_late_total") == 1
    assert newer.game_id in capsys.readouterr().out
