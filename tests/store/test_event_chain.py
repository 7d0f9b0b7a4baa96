"""The hash chain: verify_chain finds every kind of tampering at the event where it happened."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shared.infra.chain import chain, compute_hash, verify_chain
from shared.infra.codec import decode_stored, encode
from shared.infra.stored import GENESIS_HASH, NewEvent, StoredEvent


def log(n: int = 6, game_id: str = "g-1") -> list[StoredEvent]:
    """A game of ``n`` events appended by two commands, as a store would chain them."""
    first = chain(
        game_id,
        [NewEvent("TurnPlayed", {"turn": i, "note": f"move-{i}"}) for i in range(1, 4)],
        1,
        GENESIS_HASH,
        "c-1",
        100.0,
    )
    rest = chain(
        game_id,
        [NewEvent("TurnPlayed", {"turn": i, "note": f"move-{i}"}) for i in range(4, n + 1)],
        4,
        first[-1].hash,
        "c-2",
        200.0,
    )
    return first + rest


def rehash(event: StoredEvent) -> StoredEvent:
    """``event`` with its own hash recomputed (a forger who knows the algorithm)."""
    return replace(event, hash=compute_hash(event.hashed_fields()))


def test_an_intact_log_verifies() -> None:
    events = log()
    assert [e.version for e in events] == [1, 2, 3, 4, 5, 6]
    assert verify_chain(events) is None
    assert verify_chain([]) is None
    assert events[3].prev_hash == events[2].hash


def test_one_changed_byte_of_data_is_found() -> None:
    events = log()
    raw = encode(events[3])
    assert raw.count(b"move-4") == 1
    tampered = decode_stored(raw.replace(b"move-4", b"move-5"))
    assert tampered.data["note"] == "move-5"
    assert verify_chain([*events[:3], tampered, *events[4:]]) == 3


@pytest.mark.parametrize("index", [0, 2, 4])
def test_a_deleted_event_is_found(index: int) -> None:
    events = log()
    del events[index]
    assert verify_chain(events) == index


def test_a_truncated_log_is_caught_by_a_receipt() -> None:
    events = log()
    receipt = (events[-1].version, events[-1].hash)
    truncated = events[:-1]
    assert verify_chain(truncated) is None  # a shorter history is still a chain...
    assert receipt not in {(e.version, e.hash) for e in truncated}  # ...without the receipt


def test_two_reordered_events_are_found() -> None:
    events = log()
    events[1], events[2] = events[2], events[1]
    assert verify_chain(events) == 1


def test_a_rehashed_forgery_breaks_the_next_link() -> None:
    events = log()
    events[2] = rehash(replace(events[2], data={"turn": 3, "note": "forged"}))
    assert verify_chain(events) == 3


def test_a_fully_rewritten_log_is_caught_by_a_receipt() -> None:
    events = log()
    receipt = (events[4].version, events[4].hash)
    forged = chain(
        "g-1",
        [NewEvent("TurnPlayed", {"turn": 1, "note": "forged"})]
        + [NewEvent("TurnPlayed", {"turn": i, "note": f"move-{i}"}) for i in range(2, 7)],
        1,
        GENESIS_HASH,
        "c-1",
        100.0,
    )
    assert verify_chain(forged) is None  # the chain alone cannot tell...
    assert (forged[4].version, forged[4].hash) != receipt  # ...the receipt a player kept can


def test_other_fields_are_covered_by_the_hash() -> None:
    events = log()
    for change in (
        {"time": 101.0},
        {"actor": "seat-9"},
        {"command_id": "c-9"},
        {"type": "CardDrawn"},
        {"schema": 2},
    ):
        forged = [*events[:1], replace(events[1], **change), *events[2:]]  # type: ignore[arg-type]
        assert verify_chain(forged) == 1, change


def test_an_event_of_another_game_is_found() -> None:
    events = log()
    other = log(game_id="g-2")
    assert verify_chain([*events[:2], other[2], *events[3:]]) == 2
    assert verify_chain([*other[:1], *events[1:]]) == 1
    # A whole, intact log of another game is not this game's log.
    assert verify_chain(other) is None
    assert verify_chain(other, game_id="g-1") == 0


def test_segments_verify_against_their_predecessor() -> None:
    events = log()
    assert verify_chain(events[3:], start_version=4, prev_hash=events[2].hash) is None
    assert verify_chain(events[3:], start_version=4, prev_hash=events[1].hash) == 0
    assert verify_chain(events[3:], start_version=3, prev_hash=events[2].hash) == 0
    assert verify_chain(events[3:]) == 0  # by default a log starts at version 1


def test_chain_rejects_bad_envelope_fields() -> None:
    with pytest.raises(ValueError, match="prev_hash"):
        chain("g", [NewEvent("T", {})], 1, "abc", None, 1.0)
    with pytest.raises(ValueError, match="start_version"):
        chain("g", [NewEvent("T", {})], 0, GENESIS_HASH, None, 1.0)
    with pytest.raises(ValueError, match="schema of T"):
        chain("g", [NewEvent("T", {}, schema=0)], 1, GENESIS_HASH, None, 1.0)
    with pytest.raises(ValueError, match="event type"):
        chain("g", [NewEvent("", {})], 1, GENESIS_HASH, None, 1.0)
