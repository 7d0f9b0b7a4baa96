"""The one module that knows msgpack: events to bytes and back, canonical hashing, upcasting.

Canonical encoding (what the chain hashes)
    ``envelope_hash`` is the SHA-256 hex of ``msgpack.packb(canonical(fields))`` where ``fields``
    are the envelope without ``hash``: ``game_id, version, type, schema, time, command_id, actor,
    data, prev_hash`` and, on an event that has one, ``salt``. ``canonical`` keeps only
    msgpack's plain kinds (nil, bool, int in the 64-bit ranges, float, str, bytes, array, map)
    and sorts every map by key, recursively, keys being ``str`` compared by code point.
    msgpack-python always writes the shortest int and string headers, floats as float64 and
    ``bytes`` as bin, so equal values give equal bytes; a tuple is written as an array and
    decodes as a list, which hashes the same. ``time`` is always a float (``chain`` converts
    it).

Stored record
    The bytes of an event in a store are the canonical encoding of a map of the same fields plus
    ``hash`` and ``fmt`` (the record layout, :data:`FORMAT`). ``type`` and ``schema`` are fields
    of their own at the top level, so a reader knows which upcasters apply before looking at the
    data. The record keeps the event exactly as it was appended: nothing is ever rewritten.

Upcasting and verification
    ``decode_stored`` gives the event as stored; ``decode`` then upcasts it: while an upcaster is
    registered for ``(type, schema)`` it maps the data to ``schema + 1``. An upcast event keeps
    its stored form in ``as_stored``, and its ``hash``/``prev_hash`` are the stored ones, because
    the chain covers what is stored, not today's shape of it. ``verify_chain`` therefore checks
    every event in its stored form, so verifying a log read with upcasting gives the same answer
    as verifying the raw log, and an upcaster can never make a tampered log look intact (nor an
    intact log look tampered).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, NamedTuple

import msgpack  # type: ignore[import-untyped]  # msgpack ships no type information

from shared.infra.stored import StoredEvent

SALT_HEX = 32
"""Length of an event's optional ``salt`` in hex digits (128 bits, beyond guessing); see
:func:`shared.infra.chain.event_salt`."""

FORMAT = 1
"""Layout of the stored record (the ``fmt`` field); a decoder refuses any other."""

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
"""Maps the data of an event at schema ``n`` to its data at schema ``n + 1``."""

_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1
HEX_DIGITS = frozenset("0123456789abcdef")  # of a hash, a salt
_RECORD_FIELDS = frozenset(
    {
        "fmt",
        "game_id",
        "version",
        "type",
        "schema",
        "time",
        "command_id",
        "actor",
        "data",
        "prev_hash",
        "hash",
    }
)
_OPTIONAL_FIELDS = frozenset({"salt"})  # absent from records written before it existed


class CodecError(ValueError):
    """Bytes that are not a stored event, or a value that has no canonical encoding.

    The message names the field or the path inside the data that is wrong.
    """


class _Unfit(Exception):
    """Raised by the fast path for anything it does not take as it is."""


def _plain(value: Any) -> Any:
    """``canonical`` for values made of the exact plain types only (the common case: every
    event's data), without building the path of every element; ``_Unfit`` otherwise."""
    kind = type(value)
    if kind is str or kind is bool or value is None or kind is float or kind is bytes:
        return value
    if kind is int:
        if _INT_MIN <= value <= _INT_MAX:
            return value
        raise _Unfit
    if kind is list or kind is tuple:
        return [_plain(item) for item in value]
    if kind is dict:
        for key in value:
            if type(key) is not str:
                raise _Unfit
        return {key: _plain(value[key]) for key in sorted(value)}
    raise _Unfit


def _is_plain(value: Any) -> bool:
    """Whether ``value`` is made of the exact plain kinds only (what msgpack gives back for a
    well-formed record), checked without copying: decoding then keeps what msgpack built."""
    kind = type(value)
    if kind is str or kind is bool or value is None or kind is float or kind is bytes:
        return True
    if kind is int:
        return bool(_INT_MIN <= value <= _INT_MAX)
    if kind is list:
        return all(_is_plain(item) for item in value)
    if kind is dict:
        return all(type(key) is str and _is_plain(item) for key, item in value.items())
    return False


def canonical(value: Any, path: str = "value") -> Any:
    """A deep copy of ``value`` in canonical form: plain kinds only, every map sorted by key.

    Raises :class:`CodecError` naming ``path`` (extended with the keys and indexes walked) for
    anything else: other types, non-``str`` map keys, ints beyond 64 bits.
    """
    try:
        return _plain(value)
    except _Unfit:
        return _canonical(value, path)  # subclasses to convert, or the error with its path


def _canonical(value: Any, path: str) -> Any:
    if value is None or type(value) is bool:
        return value
    if isinstance(value, int):
        if not _INT_MIN <= value <= _INT_MAX:
            raise CodecError(f"{path}: int {value} does not fit in 64 bits")
        return int(value)  # an IntEnum member becomes its plain value
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)  # a str subclass (StrEnum) becomes a plain str
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, list | tuple):
        return [_canonical(item, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise CodecError(f"{path}: map key {key!r} is not a str")
        return {key: _canonical(value[key], f"{path}.{key}") for key in sorted(value)}
    raise CodecError(f"{path}: cannot encode a {type(value).__name__}")


def _pack(value: Any, what: str) -> bytes:
    try:
        packed = msgpack.packb(value, use_bin_type=True)
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. a lone surrogate in a str
        raise CodecError(f"{what}: {exc}") from exc
    assert isinstance(packed, bytes)
    return packed


def _canonical_envelope(fields: Mapping[str, Any], path: str, data_ready: bool) -> Any:
    """``canonical(fields)``; with ``data_ready`` the ``data`` field is taken as it is (it is
    canonical already: ``chain`` made it so), which saves a walk over every event's data."""
    if not data_ready:
        return canonical(fields, path)
    out = canonical({k: v for k, v in fields.items() if k != "data"}, path)
    out["data"] = fields["data"]
    return {key: out[key] for key in sorted(out)}


def envelope_hash(fields: Mapping[str, Any], data_ready: bool = False) -> str:
    """SHA-256 hex of the canonical encoding of an envelope's fields (all of them but ``hash``).
    ``data_ready``: the data is canonical already (see ``_canonical_envelope``)."""
    envelope = _canonical_envelope(fields, "envelope", data_ready)
    return hashlib.sha256(_pack(envelope, "envelope")).hexdigest()


_FMT_PAIR = msgpack.packb("fmt") + msgpack.packb(FORMAT)
_HASH_KEY = msgpack.packb("hash")
_SPLITS = ("fmt", "hash")  # the record's own keys, in their sorted place among the envelope's


@functools.lru_cache(maxsize=64)
def _map_header(size: int) -> bytes:
    header = msgpack.Packer().pack_map_header(size)
    assert isinstance(header, bytes)
    return header


class Sealed(NamedTuple):
    """An event packed once: its hash, its stored record, and its data as packed inside both."""

    hash: str
    record: bytes
    data: bytes


def seal(fields: Mapping[str, Any], data_ready: bool = False) -> Sealed:
    """The hash (``envelope_hash(fields)``) and the stored record of an envelope from one packing
    of its fields: the hash's input and the record share every key and value but ``fmt`` and
    ``hash``, which sort between them (``data`` < ``fmt`` < ``game_id`` < ``hash`` <
    ``prev_hash``), so both are joins of the same packed pieces. The record is byte for byte what
    :func:`encode` writes; the packed data is the part of it a follower of the feed folds."""
    envelope = _canonical_envelope(fields, "envelope", data_ready)
    if "fmt" in envelope or "hash" in envelope:
        raise CodecError("an envelope to seal has no fmt or hash field")
    packer = msgpack.Packer(use_bin_type=True, autoreset=False)
    parts: list[bytes] = []  # the packed pairs before "fmt", before "hash", after "hash"
    chunks: list[bytes] = []  # of the part being packed
    data = b""
    try:
        for key, value in envelope.items():
            while len(parts) < len(_SPLITS) and key > _SPLITS[len(parts)]:
                parts.append(b"".join((*chunks, packer.bytes())))
                chunks.clear()
                packer.reset()
            packer.pack(key)
            if key == "data":
                data = _pack(value, "envelope data")
                chunks += (packer.bytes(), data)
                packer.reset()
            else:
                packer.pack(value)
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. a lone surrogate in a str
        raise CodecError(f"envelope: {exc}") from exc
    while len(parts) < len(_SPLITS) + 1:
        parts.append(b"".join((*chunks, packer.bytes())))
        chunks.clear()
        packer.reset()
    before_fmt, before_hash, after_hash = parts
    hashed = _map_header(len(envelope)) + before_fmt + before_hash + after_hash
    digest = hashlib.sha256(hashed).hexdigest()
    record = b"".join(
        (
            _map_header(len(envelope) + 2),
            before_fmt,
            _FMT_PAIR,
            before_hash,
            _HASH_KEY,
            msgpack.packb(digest),
            after_hash,
        )
    )
    return Sealed(digest, record, data)


def encode(event: StoredEvent, data_ready: bool = False) -> bytes:
    """The stored record of ``event`` (of its stored form, if it was upcast on read).
    ``data_ready``: the data is canonical already (an event just made by ``chain``)."""
    stored = event.stored_form()
    record = stored.hashed_fields()
    record["hash"] = stored.hash
    record["fmt"] = FORMAT
    envelope = _canonical_envelope(record, "event", data_ready and stored is event)
    return _pack(envelope, f"event {stored.type} v{stored.version}")


def decode_stored(raw: bytes) -> StoredEvent:
    """The event exactly as stored in ``raw`` (no upcasting); :class:`CodecError` if it is not
    a well-formed record. The hash is *not* checked here: that is ``verify_chain``'s job, so a
    tampered event can still be read and pointed at."""
    if not isinstance(raw, bytes | bytearray | memoryview):
        raise CodecError(f"an event record is bytes, got {type(raw).__name__}")
    try:
        record = msgpack.unpackb(
            bytes(raw), raw=False, strict_map_key=True, use_list=True, ext_hook=_refuse_ext
        )
    except Exception as exc:  # msgpack raises many kinds (ExtraData, FormatError, ...)
        raise CodecError(
            f"not a msgpack event record ({type(exc).__name__}: {exc}): {bytes(raw[:32])!r}"
        ) from exc
    if not isinstance(record, dict):
        raise CodecError(f"an event record is a map, got {type(record).__name__}")
    missing = _RECORD_FIELDS - record.keys()
    if missing:
        raise CodecError(f"event record lacks {', '.join(sorted(missing))}")
    extra = record.keys() - _RECORD_FIELDS - _OPTIONAL_FIELDS
    if extra:
        raise CodecError(f"event record has unknown fields {', '.join(sorted(map(str, extra)))}")
    if record["fmt"] != FORMAT or type(record["fmt"]) is not int:
        raise CodecError(f"event record format {record['fmt']!r} is not {FORMAT}")
    _field(record, "game_id", str)
    _field(record, "type", str)
    _field(record, "version", int)
    _field(record, "schema", int)
    _field(record, "time", float)
    _field(record, "command_id", str, optional=True)
    _field(record, "actor", str, optional=True)
    _field(record, "data", dict)
    for name in ("prev_hash", "hash"):
        value = record[name]
        if not isinstance(value, str) or len(value) != 64 or not HEX_DIGITS.issuperset(value):
            raise CodecError(f"event field {name} is not 64 lower-case hex digits: {value!r}")
    if "salt" in record:
        salt = record["salt"]
        if not isinstance(salt, str) or len(salt) != SALT_HEX or not HEX_DIGITS.issuperset(salt):
            raise CodecError(f"event field salt is not {SALT_HEX} lower-case hex digits: {salt!r}")
    if record["version"] < 1 or record["schema"] < 1:
        raise CodecError(
            f"event version and schema start at 1: {record['version']}, {record['schema']}"
        )
    # Rejects what msgpack can carry but an event never holds (ext types, timestamps). Maps
    # come back in the order they were packed: the canonical one (``encode`` sorted them).
    if not _is_plain(record["data"]):
        record["data"] = canonical(record["data"], "event data")
    del record["fmt"]
    return StoredEvent(**record)


def unpack_data(raw: bytes) -> dict[str, Any]:
    """An event's data as :func:`seal` packed it (the part of its record a follower of the feed
    folds), trusted as its appender checked it: only a map of str keys is asked of it.
    :class:`CodecError` for anything else."""
    try:
        data = msgpack.unpackb(
            raw, raw=False, strict_map_key=True, use_list=True, ext_hook=_refuse_ext
        )
    except Exception as exc:  # msgpack raises many kinds (ExtraData, FormatError, ...)
        raise CodecError(f"not packed event data ({type(exc).__name__}: {exc})") from exc
    if not isinstance(data, dict):
        raise CodecError(f"event data is a map, got {type(data).__name__}")
    return data


def _refuse_ext(code: int, payload: bytes) -> Any:
    """Events hold no msgpack extension types (msgpack would give a tuple-like ExtType)."""
    raise ValueError(f"msgpack ext type {code} has no place in an event")


def _field(record: dict[str, Any], name: str, kind: type, optional: bool = False) -> None:
    value = record[name]
    if value is None and optional:
        return
    if type(value) is not kind:
        raise CodecError(f"event field {name} must be {kind.__name__}, got {value!r}")


class Upcasters:
    """A registry of upcasters: for an event type, one function per schema it can leave.

    Kept in an object (with a process-wide default, :data:`UPCASTERS`) so a store or a test can
    use its own set without touching everyone else's.
    """

    def __init__(self) -> None:
        self._steps: dict[tuple[str, int], Upcaster] = {}

    def register(self, event_type: str, from_schema: int, fn: Upcaster) -> None:
        """Upcast the data of ``event_type`` events from ``from_schema`` to ``from_schema + 1``."""
        if type(from_schema) is not int or from_schema < 1:
            raise ValueError(f"from_schema must be an int >= 1, got {from_schema!r}")
        key = (event_type, from_schema)
        if key in self._steps:
            raise ValueError(f"an upcaster for {event_type} schema {from_schema} is registered")
        self._steps[key] = fn

    def current_schema(self, event_type: str, schema: int) -> int:
        """The schema an event of ``event_type`` at ``schema`` comes out at after upcasting."""
        while (event_type, schema) in self._steps:
            schema += 1
        return schema

    def upcast(self, event: StoredEvent) -> StoredEvent:
        """``event`` at the newest schema its upcasters reach; ``event`` itself if none apply.

        The upcasters work on a copy, so the stored form (kept in ``as_stored``) stays intact;
        an upcaster that fails or returns what cannot be encoded raises :class:`CodecError`.
        """
        stored = event.stored_form()
        schema, data = stored.schema, stored.data
        while (step := self._steps.get((stored.type, schema))) is not None:
            where = f"upcasting {stored.type} v{stored.version} from schema {schema}"
            try:
                result = step(canonical(data, "event data"))
            except CodecError:
                raise
            except Exception as exc:
                raise CodecError(f"{where}: {type(exc).__name__}: {exc}") from exc
            if not isinstance(result, Mapping):
                raise CodecError(f"{where}: the upcaster returned a {type(result).__name__}")
            data = canonical(result, f"{where}: data")
            schema += 1
        if schema == stored.schema:
            return stored
        return StoredEvent(
            game_id=stored.game_id,
            version=stored.version,
            type=stored.type,
            schema=schema,
            time=stored.time,
            command_id=stored.command_id,
            actor=stored.actor,
            data=data,
            prev_hash=stored.prev_hash,
            hash=stored.hash,
            salt=stored.salt,
            as_stored=stored,
        )


UPCASTERS = Upcasters()
"""The process-wide registry that :func:`register_upcaster` fills and stores use by default."""


def register_upcaster(event_type: str, from_schema: int, fn: Upcaster) -> None:
    """Register ``fn`` in the process-wide registry (see :meth:`Upcasters.register`)."""
    UPCASTERS.register(event_type, from_schema, fn)


def decode(raw: bytes, upcasters: Upcasters = UPCASTERS) -> StoredEvent:
    """The event in ``raw`` at its current schema (stored form in ``as_stored`` if upcast)."""
    return upcasters.upcast(decode_stored(raw))


def decode_of_types(
    records: Iterable[bytes], types: Collection[str], upcasters: Upcasters = UPCASTERS
) -> list[StoredEvent]:
    """The events of ``types`` among ``records`` (in their order), decoding only the records that
    may be of them: a record holds its type's name as msgpack packs a str, always in the same
    (shortest) form, so one that holds none of the names is of none of the types (and
    upcasting never changes a type). A record that holds a name elsewhere (in its data) is
    decoded and passed over. For a reader after a few events of a long log (a finished game's
    seats and result among all its turns)."""
    marks = tuple(msgpack.packb(kind) for kind in types)
    out = []
    for raw in records:
        if any(mark in raw for mark in marks):
            event = decode(raw, upcasters)
            if event.type in types:
                out.append(event)
    return out
