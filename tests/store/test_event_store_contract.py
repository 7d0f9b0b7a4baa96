"""The event store contract, run against every backend (see conftest: memory, fakeredis, a real
Redis when REDIS_URL is set, a Redis Cluster started by the session)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from store_backends import Backend

from shared.infra.chain import verify_chain
from shared.infra.codec import CodecError, Upcasters
from shared.infra.store import AppendResult, HeadMismatch, VersionConflict
from shared.infra.stored import GENESIS_HASH, NewEvent, StoredEvent


def ev(n: int, kind: str = "TurnPlayed", **data: Any) -> NewEvent:
    """A small event whose data says which one it is."""
    return NewEvent(kind, {"n": n, **data}, actor=f"seat-{n % 3}")


def evs(*ns: int) -> list[NewEvent]:
    return [ev(n) for n in ns]


async def _next(it: Any, timeout: float = 5.0) -> StoredEvent:
    event: StoredEvent = await asyncio.wait_for(anext(it), timeout)
    return event


class TestAppendAndRead:
    async def test_round_trip(self, backend: Backend) -> None:
        g = backend.game()
        news = [
            NewEvent("GameCreated", {"rules": "robbers", "seats": ("a", "b")}, actor="host"),
            NewEvent("RoundDealt", {"hands": {"b": [3, 1], "a": [52]}, "seed": b"\x00\xff"}, 2),
        ]
        result = await backend.store.append(g, news, 0, command_id="c-1", time=1700000000.5)
        read = await backend.store.read(g)
        assert read == list(result.events)
        first, second = read
        assert (first.game_id, first.version, first.type, first.schema) == (g, 1, "GameCreated", 1)
        assert (first.actor, first.command_id, first.time) == ("host", "c-1", 1700000000.5)
        assert first.data == {"rules": "robbers", "seats": ["a", "b"]}
        assert (second.version, second.schema, second.actor) == (2, 2, None)
        assert second.data == {"hands": {"a": [52], "b": [3, 1]}, "seed": b"\x00\xff"}
        assert result == AppendResult(1, 2, second.hash, False, None, tuple(read))

    async def test_time_defaults_to_now(self, backend: Backend) -> None:
        import time

        before = time.time()
        await backend.store.append(backend.game(), evs(1), 0)
        (event,) = await backend.store.read(backend.games[-1])
        assert before <= event.time <= time.time()

    async def test_versions_are_contiguous_from_one(self, backend: Backend) -> None:
        g = backend.game()
        a = await backend.store.append(g, evs(1, 2), 0)
        b = await backend.store.append(g, evs(3, 4, 5), 2)
        assert (a.first_version, a.last_version, b.first_version, b.last_version) == (1, 2, 3, 5)
        read = await backend.store.read(g)
        assert [e.version for e in read] == [1, 2, 3, 4, 5]
        assert [e.data["n"] for e in read] == [1, 2, 3, 4, 5]

    async def test_hash_chain_verifies_and_links_across_appends(self, backend: Backend) -> None:
        g = backend.game()
        a = await backend.store.append(g, evs(1, 2), 0)
        b = await backend.store.append(g, evs(3), 2)
        read = await backend.store.read(g)
        assert verify_chain(read) is None
        assert read[0].prev_hash == GENESIS_HASH
        assert read[2].prev_hash == a.head == read[1].hash
        assert await backend.store.version(g) == (3, b.head) == (3, read[2].hash)

    async def test_unknown_game(self, backend: Backend) -> None:
        g = backend.game()
        assert await backend.store.version(g) == (0, GENESIS_HASH)
        assert await backend.store.read(g) == []

    async def test_read_after_and_limit(self, backend: Backend) -> None:
        g = backend.game()
        await backend.store.append(g, evs(*range(1, 11)), 0)

        async def versions(after: int = 0, limit: int | None = None) -> list[int]:
            return [e.version for e in await backend.store.read(g, after=after, limit=limit)]

        assert await versions(3) == [4, 5, 6, 7, 8, 9, 10]
        assert await versions(3, 4) == [4, 5, 6, 7]
        assert await versions(0, 1) == [1]
        assert await versions(8, 5) == [9, 10]
        assert await versions(3, 0) == []
        assert await versions(10) == []
        assert await versions(99) == []
        with pytest.raises(ValueError, match="after"):
            await backend.store.read(g, after=-1)
        with pytest.raises(ValueError, match="limit"):
            await backend.store.read(g, limit=-1)

    async def test_reads_cross_page_boundaries(
        self, backend: Backend, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr("shared.infra.store.redis.PAGE", 3)
        g = backend.game()
        await backend.store.append(g, evs(*range(1, 9)), 0)
        assert [e.version for e in await backend.store.read(g)] == list(range(1, 9))
        assert [e.version for e in await backend.store.read(g, after=2, limit=5)] == [3, 4, 5, 6, 7]
        sub = backend.store.subscribe(g, after=1)
        assert [(await _next(sub)).version for _ in range(7)] == list(range(2, 9))
        await sub.aclose()  # type: ignore[attr-defined]

    async def test_list_games(self, backend: Backend) -> None:
        g1, g2 = backend.game(), backend.game()
        await backend.store.append(g1, evs(1), 0)
        await backend.store.append(g2, evs(1), 0)
        assert await backend.store.list_games() == sorted([g1, g2])

    async def test_bad_arguments_append_nothing(self, backend: Backend) -> None:
        g = backend.game()
        with pytest.raises(ValueError, match="at least one event"):
            await backend.store.append(g, [], 0)
        with pytest.raises(ValueError, match="game id"):
            await backend.store.append("a{b}", evs(1), 0)
        with pytest.raises(ValueError, match="expected_version"):
            await backend.store.append(g, evs(1), -1)
        with pytest.raises(CodecError, match=r"data of TurnPlayed\.bad"):
            await backend.store.append(g, [ev(1, bad={1, 2})], 0)
        assert await backend.store.read(g) == []
        assert await backend.store.version(g) == (0, GENESIS_HASH)


class TestOptimisticConcurrency:
    async def test_version_conflict_appends_nothing(self, backend: Backend) -> None:
        g = backend.game()
        ok = await backend.store.append(g, evs(1, 2), 0)
        for stale in (0, 1, 3, 7):
            with pytest.raises(VersionConflict) as info:
                await backend.store.append(g, evs(9), stale)
            assert (info.value.expected, info.value.actual, info.value.head) == (stale, 2, ok.head)
            assert not isinstance(info.value, HeadMismatch)
        assert [e.data["n"] for e in await backend.store.read(g)] == [1, 2]
        assert await backend.store.version(g) == (2, ok.head)

    async def test_expected_head_is_checked(self, backend: Backend) -> None:
        g = backend.game()
        ok = await backend.store.append(g, evs(1), 0)
        with pytest.raises(HeadMismatch) as info:
            await backend.store.append(g, evs(2), 1, expected_head="ab" * 32)
        assert (info.value.expected_head, info.value.head) == ("ab" * 32, ok.head)
        assert await backend.store.version(g) == (1, ok.head)
        second = await backend.store.append(g, evs(2), 1, expected_head=ok.head)
        assert second.events[0].prev_hash == ok.head
        assert verify_chain(await backend.store.read(g)) is None

    async def test_concurrent_appends_exactly_one_wins(self, backend: Backend) -> None:
        g = backend.game()
        await backend.store.append(g, evs(0), 0)
        outcomes = await asyncio.gather(
            *(
                backend.store.append(g, evs(i, i + 100), 1, command_id=f"c{i}")
                for i in range(1, 21)
            ),
            return_exceptions=True,
        )
        wins = [o for o in outcomes if isinstance(o, AppendResult)]
        conflicts = [o for o in outcomes if isinstance(o, VersionConflict)]
        assert len(wins) == 1 and len(conflicts) == 19, outcomes
        read = await backend.store.read(g)
        assert [e.version for e in read] == [1, 2, 3]
        assert read[1:] == list(wins[0].events)
        assert verify_chain(read) is None

    async def test_concurrent_retries_of_one_command_apply_it_once(self, backend: Backend) -> None:
        g = backend.game()
        outcomes = await asyncio.gather(
            *(
                backend.store.append(g, evs(1), 0, command_id="same", fingerprint="f")
                for _ in range(10)
            )
        )
        assert sum(not o.duplicate for o in outcomes) == 1
        assert {(o.first_version, o.last_version, o.head, o.fingerprint) for o in outcomes} == {
            (1, 1, outcomes[0].head, "f")
        }
        assert len(await backend.store.read(g)) == 1


class TestCommandDedup:
    async def test_retry_returns_the_original_outcome(self, backend: Backend) -> None:
        g = backend.game()
        first = await backend.store.append(g, evs(1, 2), 0, command_id="c1", fingerprint="fp-1")
        again = await backend.store.append(g, evs(1, 2), 0, command_id="c1", fingerprint="fp-1")
        assert again == AppendResult(1, 2, first.head, True, "fp-1", ())
        assert len(await backend.store.read(g)) == 2

    async def test_retry_after_other_appends(self, backend: Backend) -> None:
        g = backend.game()
        first = await backend.store.append(g, evs(1), 0, command_id="c1", fingerprint="a b c")
        await backend.store.append(g, evs(2, 3), 1, command_id="c2")
        await backend.store.append(g, evs(4), 3)
        # A stale expected version does not matter: the command was applied, its outcome stands.
        again = await backend.store.append(g, evs(1), 0, command_id="c1", fingerprint="a b c")
        assert (again.duplicate, again.first_version, again.last_version) == (True, 1, 1)
        assert (again.head, again.fingerprint) == (first.head, "a b c")
        assert await backend.store.version(g) == (4, (await backend.store.read(g))[-1].hash)

    async def test_reused_id_reports_the_original_fingerprint(self, backend: Backend) -> None:
        g = backend.game()
        await backend.store.append(g, evs(1), 0, command_id="c1", fingerprint="original")
        reused = await backend.store.append(g, evs(7), 1, command_id="c1", fingerprint="other")
        assert reused.duplicate and reused.fingerprint == "original"
        no_fp = await backend.store.append(g, evs(8), 1, command_id="c2")
        assert (await backend.store.append(g, evs(8), 1, command_id="c2")).fingerprint is None
        assert no_fp.fingerprint is None
        assert [e.data["n"] for e in await backend.store.read(g)] == [1, 8]

    async def test_a_conflicting_command_is_not_remembered(self, backend: Backend) -> None:
        g = backend.game()
        await backend.store.append(g, evs(1), 0)
        with pytest.raises(VersionConflict):
            await backend.store.append(g, evs(2), 0, command_id="c")
        retried = await backend.store.append(g, evs(2), 1, command_id="c")
        assert not retried.duplicate and retried.first_version == 2

    async def test_outcome_looks_up_a_command_without_appending(self, backend: Backend) -> None:
        g = backend.game()
        assert await backend.store.outcome(g, "c1") is None
        first = await backend.store.append(g, evs(1, 2), 0, command_id="c1", fingerprint="fp")
        await backend.store.append(g, evs(3), 2, command_id="c2")
        with pytest.raises(VersionConflict):
            await backend.store.append(g, evs(4), 0, command_id="c3")
        assert await backend.store.outcome(g, "c1") == AppendResult(1, 2, first.head, True, "fp")
        assert (await backend.store.outcome(g, "c2")) is not None
        assert await backend.store.outcome(g, "c3") is None
        assert await backend.store.outcome(backend.game(), "c1") is None
        with pytest.raises(ValueError, match="command_id"):
            await backend.store.outcome(g, "")

    async def test_command_ids_are_per_game(self, backend: Backend) -> None:
        g1, g2 = backend.game(), backend.game()
        await backend.store.append(g1, evs(1), 0, command_id="c")
        other = await backend.store.append(g2, evs(1), 0, command_id="c")
        assert not other.duplicate
        assert len(await backend.store.read(g2)) == 1


class TestSubscribe:
    async def test_existing_then_new_events(self, backend: Backend) -> None:
        g = backend.game()
        await backend.store.append(g, evs(1, 2, 3), 0)
        sub = backend.store.subscribe(g, after=1)
        assert [(await _next(sub)).version for _ in range(2)] == [2, 3]
        pending = asyncio.ensure_future(_next(sub))
        await asyncio.sleep(0.05)
        assert not pending.done()  # it waits for an event that does not exist yet
        await backend.store.append(g, evs(4, 5), 3)
        fourth = await asyncio.wait_for(pending, 5)
        fifth = await _next(sub)
        assert [(e.version, e.data["n"]) for e in (fourth, fifth)] == [(4, 4), (5, 5)]
        assert (
            verify_chain(
                [fourth, fifth], start_version=4, prev_hash=(await backend.store.read(g))[2].hash
            )
            is None
        )
        await sub.aclose()  # type: ignore[attr-defined]

    async def test_a_game_that_does_not_exist_yet(self, backend: Backend) -> None:
        g = backend.game()
        sub = backend.store.subscribe(g)
        pending = asyncio.ensure_future(_next(sub))
        await asyncio.sleep(0.05)
        assert not pending.done()
        await backend.store.append(g, evs(1), 0)
        assert (await asyncio.wait_for(pending, 5)).version == 1
        await sub.aclose()  # type: ignore[attr-defined]

    async def test_two_subscribers_see_the_same_events(self, backend: Backend) -> None:
        g = backend.game()
        subs = [backend.store.subscribe(g), backend.store.subscribe(g)]
        pending = [asyncio.ensure_future(_next(s)) for s in subs]
        await asyncio.sleep(0.02)
        await backend.store.append(g, evs(1), 0)
        got = await asyncio.gather(*pending)
        assert got[0] == got[1] and got[0].version == 1
        for s in subs:
            await s.aclose()  # type: ignore[attr-defined]


class TestUpcastingThroughTheStore:
    async def test_old_schema_comes_out_current_and_still_verifies(self, backend: Backend) -> None:
        upcasters = Upcasters()
        upcasters.register("CardDrawn", 1, lambda d: {"cards": [d["card"]]})
        g = backend.game()
        await backend.store.append(g, [NewEvent("CardDrawn", {"card": 7}, schema=1)], 0)
        await backend.store.append(g, [NewEvent("CardDrawn", {"cards": [8, 9]}, schema=2)], 1)
        assert [e.schema for e in await backend.store.read(g)] == [1, 2]  # no upcaster yet
        backend.store.upcasters = upcasters  # as after a deploy that brought schema 2
        old, new = await backend.store.read(g)
        assert (old.schema, old.data) == (2, {"cards": [7]})
        assert (old.stored_form().schema, old.stored_form().data) == (1, {"card": 7})
        assert (new.schema, new.data, new.as_stored) == (2, {"cards": [8, 9]}, None)
        assert verify_chain([old, new]) is None


class TestReadingSomeTypes:
    async def test_the_events_of_some_types_are_the_log_filtered(self, backend: Backend) -> None:
        """``read_types`` gives what ``read`` gives of those types, in order and upcast; an event
        of another type naming one of them in its data is passed over."""
        upcasters = Upcasters()
        upcasters.register("PlayerSeated", 1, lambda d: {**d, "player": d.get("player", "")})
        g = backend.game()
        news = [
            NewEvent("GameCreated", {"rules": "robbers"}),
            NewEvent("PlayerSeated", {"seat": 0}, schema=1),
            *evs(1, 2, 3),
            ev(4, note="PlayerSeated"),  # the name in the data of another type
            NewEvent("PlayerSeated", {"seat": 1, "player": "p"}, schema=2),
            *evs(5, 6),
        ]
        await backend.store.append(g, news, 0)
        backend.store.upcasters = upcasters
        wanted = {"GameCreated", "PlayerSeated"}
        got = await backend.store.read_types(g, wanted)
        assert got == [e for e in await backend.store.read(g) if e.type in wanted]
        assert [(e.version, e.type, e.schema) for e in got] == [
            (1, "GameCreated", 1),
            (2, "PlayerSeated", 2),
            (7, "PlayerSeated", 2),
        ]
        assert got[1].data == {"seat": 0, "player": ""}
        assert await backend.store.read_types(g, {"MatchEnded"}) == []
        assert await backend.store.read_types(backend.game(), wanted) == []
