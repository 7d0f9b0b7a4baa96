"""The codec: records round trip, carry their type and schema, upcast on read, refuse garbage
with a CodecError that says what is wrong, and hash the documented canonical encoding."""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import replace
from enum import IntEnum, StrEnum
from typing import Any

import msgpack
import pytest

from shared.infra import codec
from shared.infra.chain import chain, event_salt, verify_chain
from shared.infra.chain import sealed_chain as chain_sealed
from shared.infra.codec import CodecError, Upcasters, decode, decode_stored, encode
from shared.infra.stored import GENESIS_HASH, NewEvent, StoredEvent


def stored(*news: NewEvent, game_id: str = "game-1") -> list[StoredEvent]:
    return chain(game_id, news, 1, GENESIS_HASH, "cmd-1", 1700000000.25)


def record_of(event: StoredEvent) -> dict[str, Any]:
    unpacked: dict[str, Any] = msgpack.unpackb(encode(event), raw=False)
    return unpacked


def raw_record(**changes: Any) -> bytes:
    """A valid record with some fields changed (or removed, for the value ``...``)."""
    (event,) = stored(NewEvent("TurnPlayed", {"n": 1}))
    record = record_of(event) | changes
    return bytes(msgpack.packb({k: v for k, v in record.items() if v is not ...}))


GOLDEN = NewEvent(
    "GameCreated", {"seats": ["a", "b"], "rules": "robbers", "seed_hash": "ab" * 32}, actor="host"
)


def test_round_trip() -> None:
    (event,) = stored(
        NewEvent(
            "RoundDealt",
            {"hands": {"b": [1, 2], "a": [52]}, "seed": b"\x00\xff", "x": 1.5, "none": None},
            schema=3,
            actor="referee",
        )
    )
    raw = encode(event)
    assert decode(raw) == event == decode_stored(raw)
    assert decode(raw).as_stored is None
    assert encode(decode(raw)) == raw


def test_the_record_carries_type_tag_and_schema() -> None:
    (event,) = stored(NewEvent("CardDrawn", {"card": 7}, schema=4))
    record = record_of(event)
    assert (record["fmt"], record["type"], record["schema"]) == (codec.FORMAT, "CardDrawn", 4)
    assert record["hash"] == event.hash and record["version"] == 1
    assert list(record) == sorted(record)  # canonical: keys sorted


def test_hash_is_sha256_of_the_documented_canonical_encoding() -> None:
    (event,) = stored(GOLDEN)
    # Recomputed here from the documented rule, independently of the codec.
    fields = {
        "actor": "host",
        "command_id": "cmd-1",
        "data": {"rules": "robbers", "seats": ["a", "b"], "seed_hash": "ab" * 32},
        "game_id": "game-1",
        "prev_hash": GENESIS_HASH,
        "schema": 1,
        "time": 1700000000.25,
        "type": "GameCreated",
        "version": 1,
    }
    expected = hashlib.sha256(msgpack.packb(fields, use_bin_type=True)).hexdigest()
    assert event.hash == expected
    # Pinned: changing the canonical encoding would orphan every receipt ever handed out.
    assert event.hash == "a644e13652e4a7bac30da4aab49c272164b351465876167c15e8b0708c881b7e"


def test_equal_data_in_any_key_order_hashes_the_same() -> None:
    a = stored(NewEvent("T", {"b": 1, "a": {"y": 2, "x": [3, (4, 5)]}}))
    b = stored(NewEvent("T", {"a": {"x": [3, [4, 5]], "y": 2}, "b": 1}))
    assert a[0].hash == b[0].hash and encode(a[0]) == encode(b[0])
    assert stored(NewEvent("T", {"b": 2}))[0].hash != stored(NewEvent("T", {"b": 1}))[0].hash


def test_int_and_float_time_hash_the_same() -> None:
    one = chain("g", [NewEvent("T", {})], 1, GENESIS_HASH, None, 1000)
    two = chain("g", [NewEvent("T", {})], 1, GENESIS_HASH, None, 1000.0)
    assert one == two and type(one[0].time) is float


def test_enums_and_tuples_become_plain_values() -> None:
    class Suit(IntEnum):
        HEARTS = 1

    class Code(StrEnum):
        LATE = "late"

    (event,) = stored(NewEvent("T", {"suit": Suit.HEARTS, "code": Code.LATE, "t": (1, 2)}))
    assert event.data == {"code": "late", "suit": 1, "t": [1, 2]}
    assert type(event.data["suit"]) is int and type(event.data["code"]) is str
    assert decode(encode(event)) == event


def test_chain_keeps_a_copy_of_the_data() -> None:
    data: dict[str, Any] = {"cards": [1, 2]}
    (event,) = stored(NewEvent("T", data))
    data["cards"].append(3)
    assert event.data == {"cards": [1, 2]}
    assert verify_chain([event]) is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"s": {1, 2}}, r"data of T\.s: cannot encode a set"),
        ({"x": [1, object()]}, r"data of T\.x\[1\]: cannot encode a object"),
        ({"m": {3: "three"}}, r"data of T\.m: map key 3 is not a str"),
        ({"big": 2**64}, r"data of T\.big: int 18446744073709551616 does not fit"),
        ({"s": "\ud800"}, r"surrogate"),
    ],
)
def test_what_cannot_be_encoded_fails_with_its_path(data: dict[str, Any], message: str) -> None:
    with pytest.raises(CodecError, match=message):
        stored(NewEvent("T", data))


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", r"not a msgpack event record"),
        (b"\xc1", r"not a msgpack event record"),
        (b"\x92\x01", r"not a msgpack event record"),  # truncated array
        (b"\x01\x02", r"not a msgpack event record"),  # extra data
        (b"\x05", r"an event record is a map, got int"),
        (bytes(msgpack.packb(["TurnPlayed", 1])), r"an event record is a map, got list"),
        (raw_record(type=...), r"event record lacks type"),
        (raw_record(extra=1), r"unknown fields extra"),
        (raw_record(fmt=2), r"format 2 is not 1"),
        (raw_record(version="3"), r"field version must be int, got '3'"),
        (raw_record(time=5), r"field time must be float"),
        (raw_record(data=[1]), r"field data must be dict"),
        (raw_record(hash="xyz"), r"field hash is not 64 lower-case hex digits"),
        (raw_record(schema=0), r"version and schema start at 1"),
        (raw_record(data={"t": msgpack.ExtType(5, b"x")}), r"msgpack ext type 5 has no place"),
        (raw_record(data={"b": {b"k": 1}}), r"event data\.b: map key b'k' is not a str"),
    ],
)
def test_garbage_raises_a_codec_error_naming_the_problem(raw: bytes, message: str) -> None:
    with pytest.raises(CodecError, match=message):
        decode(raw)


def test_not_bytes_at_all() -> None:
    with pytest.raises(CodecError, match="is bytes, got str"):
        decode("a string")  # type: ignore[arg-type]


def test_random_bytes_never_escape_as_another_error() -> None:
    import random

    rng = random.Random(5)
    (event,) = stored(NewEvent("T", {"cards": [1, 2, 3], "who": "a"}))
    raw = bytearray(encode(event))
    for _ in range(300):
        mutated = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        with contextlib.suppress(CodecError):
            decode(bytes(mutated))
    for _ in range(300):
        with contextlib.suppress(CodecError):
            decode(bytes(rng.randrange(256) for _ in range(rng.randint(0, 40))))


class TestUpcasting:
    def registry(self) -> Upcasters:
        ups = Upcasters()
        ups.register("CardDrawn", 1, lambda d: {"cards": [d["card"]]})
        ups.register("CardDrawn", 2, lambda d: {**d, "from": "stock"})
        return ups

    def test_old_schema_is_upcast_on_read(self) -> None:
        (event,) = stored(NewEvent("CardDrawn", {"card": 9}, schema=1))
        raw = encode(event)
        up = decode(raw, self.registry())
        assert (up.schema, up.data) == (3, {"cards": [9], "from": "stock"})
        assert (up.hash, up.prev_hash, up.version) == (event.hash, event.prev_hash, 1)
        assert up.stored_form() == event and up.stored_form().schema == 1
        assert decode_stored(raw) == event  # without upcasting: as stored
        assert encode(up) == raw  # re-encoding never rewrites history

    def test_current_schema_is_left_alone(self) -> None:
        (event,) = stored(NewEvent("CardDrawn", {"cards": [1], "from": "discard"}, schema=3))
        assert decode(encode(event), self.registry()) == event
        (other,) = stored(NewEvent("TurnPlayed", {"card": 1}, schema=1))
        assert decode(encode(other), self.registry()).schema == 1
        assert self.registry().current_schema("CardDrawn", 1) == 3

    def test_verify_chain_checks_the_stored_form(self) -> None:
        events = chain(
            "g",
            [NewEvent("CardDrawn", {"card": 1}), NewEvent("CardDrawn", {"cards": [2]}, 2)],
            1,
            GENESIS_HASH,
            None,
            1.0,
        )
        upcast = [decode(encode(e), self.registry()) for e in events]
        assert [e.schema for e in upcast] == [3, 3]
        assert verify_chain(upcast) is None
        # Tampering with the stored form is still found through the upcast event.
        forged = [decode(raw_tamper(encode(events[0])), self.registry()), upcast[1]]
        assert verify_chain(forged) == 0

    def test_an_upcaster_cannot_damage_the_stored_form(self) -> None:
        ups = Upcasters()

        def in_place(d: dict[str, Any]) -> dict[str, Any]:
            d["card"] = -1
            return {"cards": [d.pop("card")]}

        ups.register("CardDrawn", 1, in_place)
        (event,) = stored(NewEvent("CardDrawn", {"card": 4}))
        up = decode(encode(event), ups)
        assert up.data == {"cards": [-1]} and up.stored_form().data == {"card": 4}
        assert verify_chain([up]) is None

    def test_a_failing_upcaster_is_a_codec_error(self) -> None:
        ups = Upcasters()
        ups.register("CardDrawn", 1, lambda d: {"cards": [d["missing"]]})
        (event,) = stored(NewEvent("CardDrawn", {"card": 4}))
        with pytest.raises(CodecError, match="upcasting CardDrawn v1 from schema 1: KeyError"):
            decode(encode(event), ups)

    def test_registration_is_checked(self) -> None:
        ups = self.registry()
        with pytest.raises(ValueError, match="is registered"):
            ups.register("CardDrawn", 1, lambda d: d)
        with pytest.raises(ValueError, match="from_schema"):
            ups.register("CardDrawn", 0, lambda d: d)


def raw_tamper(raw: bytes) -> bytes:
    """The record with one byte of its data changed (the card number 1 becomes 2)."""
    marker = b"\xa4card\x01"
    assert raw.count(marker) == 1
    return raw.replace(marker, b"\xa4card\x02")


def test_the_shortcut_for_chained_data_encodes_and_hashes_exactly_the_same() -> None:
    """Appends skip re-walking data that ``chain`` made canonical: same bytes, same hashes."""
    data = {"b": [3, (1, 2), {"z": None, "a": "x"}], "a": {"k": [True, 1.5, b"\x00"]}}
    for event in chain("g1", [NewEvent("T", data), NewEvent("U", {})], 1, GENESIS_HASH, "c", 5):
        assert encode(event, data_ready=True) == encode(event)
        fields = event.hashed_fields()
        assert codec.envelope_hash(fields, data_ready=True) == codec.envelope_hash(fields)
        assert decode_stored(encode(event, data_ready=True)) == event
    fresh = chain("g1", [NewEvent("T", data)], 1, GENESIS_HASH, None, 5)
    decoded = [decode_stored(encode(e, data_ready=True)) for e in fresh]
    assert verify_chain(decoded) is None  # the hashes check out on read


def test_a_salted_event_round_trips_and_its_hash_covers_the_salt() -> None:
    key = b"\x07" * 32
    unsalted, salted = (
        chain("game-1", [GOLDEN], 1, GENESIS_HASH, "cmd-1", 1.0, salt_key)[0]
        for salt_key in (None, key)
    )
    assert unsalted.salt is None and "salt" not in record_of(unsalted)
    assert salted.salt == codec_salt(key) and record_of(salted)["salt"] == salted.salt
    assert salted.hash != unsalted.hash
    assert decode(encode(salted)) == salted and verify_chain([salted]) is None
    assert verify_chain([replace(salted, salt=codec_salt(b"\x08" * 32))]) == 0
    assert verify_chain([replace(salted, salt=None)]) == 0


def codec_salt(key: bytes) -> str:
    return event_salt(key, "game-1", 1)


@pytest.mark.parametrize(
    ("salt", "message"),
    [("ab" * 8, "salt is not 32"), ("AB" * 16, "salt is not 32"), (7, "salt is not 32")],
)
def test_a_malformed_salt_is_refused(salt: object, message: str) -> None:
    with pytest.raises(CodecError, match=message):
        decode_stored(raw_record(salt=salt))


@pytest.mark.parametrize("salt_key", [None, b"\x07" * 32])
@pytest.mark.parametrize("command_id", [None, "c-1"])
def test_an_event_packed_once_has_the_hash_and_record_of_packing_it_twice(
    salt_key: bytes | None, command_id: str | None
) -> None:
    """The append path packs each event once for its hash and record: the same bytes as
    ``encode`` and the same hash as ``envelope_hash``, so the logs do not change."""
    big = {"cards": list(range(40)), "name": "x" * 300, "nested": {"z": [1.5, None], "a": b"\x01"}}
    news = [NewEvent("T", {"card": 1}), NewEvent("U", big, schema=3, actor="seat:1")]
    events, sealed = chain_sealed("game-1", news, 7, "ab" * 32, command_id, 5, salt_key)
    assert len(sealed) == len(events) == 2
    for event, (digest, record, data) in zip(events, sealed, strict=True):
        assert record == encode(event)
        assert digest == event.hash == codec.envelope_hash(event.hashed_fields())
        assert decode_stored(record) == event
        assert data == msgpack.packb(event.data) and data in record
    assert events == chain("game-1", news, 7, "ab" * 32, command_id, 5, salt_key)
    assert verify_chain(events, start_version=7, prev_hash="ab" * 32) is None


def test_sealing_refuses_what_cannot_be_packed_naming_it() -> None:
    fields = chain("game-1", [GOLDEN], 1, GENESIS_HASH, None, 1.0)[0].hashed_fields()
    with pytest.raises(CodecError, match="envelope"):
        codec.seal({**fields, "actor": "\ud800"})
    with pytest.raises(CodecError, match="no fmt or hash"):
        codec.seal({**fields, "hash": "0" * 64})
