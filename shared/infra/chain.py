"""The hash chain of a game's log.

The store turns :class:`NewEvent` values into :class:`StoredEvent` values with ``chain``: each
carries the SHA-256 of its own envelope and the hash of the event before it, so changing,
removing or reordering any event breaks every later link, and a chain head (version, hash) that a
player kept as a receipt pins the whole history before it.

The hash is computed over the canonical encoding of every envelope field except ``hash`` (see
:func:`shared.infra.codec.envelope_hash`), always over the event *as stored*: an event that was
upcast on read keeps a reference to its stored form, and :func:`verify_chain` checks that form.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence
from typing import Any

from shared.infra.codec import HEX_DIGITS, SALT_HEX, Sealed, canonical, envelope_hash, seal
from shared.infra.stored import GENESIS_HASH, NewEvent, StoredEvent


def compute_hash(fields: Mapping[str, Any], data_ready: bool = False) -> str:
    """SHA-256 hex of the canonical encoding of an envelope's fields (all but ``hash``);
    ``data_ready``: ``fields["data"]`` is canonical already."""
    return envelope_hash(fields, data_ready)


def event_salt(key: bytes, game_id: str, version: int) -> str:
    """The salt of event ``version`` of ``game_id`` under ``key`` (the game's secret seed): the
    same for every referee that appends it, unknowable to the seats until the seed is revealed,
    and checkable by anyone after that."""
    message = f"salt\x00{game_id}\x00{version}".encode()
    return hmac.digest(key, message, "sha256").hex()[:SALT_HEX]


def chain(
    game_id: str,
    events: Sequence[NewEvent],
    start_version: int,
    prev_hash: str,
    command_id: str | None,
    time: float,
    salt_key: bytes | None = None,
) -> list[StoredEvent]:
    """The events of :func:`sealed_chain` without their records."""
    stored, _ = sealed_chain(game_id, events, start_version, prev_hash, command_id, time, salt_key)
    return stored


def sealed_chain(
    game_id: str,
    events: Sequence[NewEvent],
    start_version: int,
    prev_hash: str,
    command_id: str | None,
    time: float,
    salt_key: bytes | None = None,
) -> tuple[list[StoredEvent], list[Sealed]]:
    """Place ``events`` in ``game_id``'s log after version ``start_version - 1`` whose hash is
    ``prev_hash``: number them from ``start_version`` and link each to the one before.
    ``salt_key``, when given, salts every event (see :func:`event_salt`), so the hash of an
    event with hidden data reveals nothing a seat could test guesses against.

    Raises ``ValueError`` for an envelope field of the wrong kind and
    :class:`shared.infra.codec.CodecError` for data the codec cannot encode canonically, so a bad
    event fails here, before anything is stored.

    With the events come their stored records (what :func:`shared.infra.codec.encode` writes)
    and packed data, packed in the same pass as their hashes: each event is packed once.
    """
    _check_text("game_id", game_id)
    if command_id is not None:
        _check_text("command_id", command_id)
    if isinstance(start_version, bool) or not isinstance(start_version, int) or start_version < 1:
        raise ValueError(f"start_version must be an int >= 1, got {start_version!r}")
    _check_hash("prev_hash", prev_hash)
    if isinstance(time, bool) or not isinstance(time, int | float):
        raise ValueError(f"time must be a number of unix seconds, got {time!r}")
    stamp = float(time)  # one numeric type, so the hash does not depend on int vs float
    out: list[StoredEvent] = []
    sealed: list[Sealed] = []
    prev = prev_hash
    for offset, new in enumerate(events):
        _check_new(new)
        fields: dict[str, Any] = {
            "game_id": game_id,
            "version": start_version + offset,
            "type": new.type,
            "schema": new.schema,
            "time": stamp,
            "command_id": command_id,
            "actor": new.actor,
            # A canonical copy: the caller may go on mutating its dict, and the stored event must
            # look exactly like the one a read decodes (tuples as lists, keys sorted).
            "data": canonical(new.data, f"data of {new.type}"),
            "prev_hash": prev,
        }
        if salt_key is not None:
            fields["salt"] = event_salt(salt_key, game_id, start_version + offset)
        packed = seal(fields, data_ready=True)
        out.append(StoredEvent(**fields, hash=packed.hash))
        sealed.append(packed)
        prev = packed.hash
    return out, sealed


def verify_chain(
    events: Sequence[StoredEvent],
    *,
    start_version: int = 1,
    prev_hash: str = GENESIS_HASH,
    game_id: str | None = None,
) -> int | None:
    """Index of the first event that breaks the chain, or ``None`` when all of it holds.

    An event breaks the chain when its hash is not the hash of its (stored) envelope, when it does
    not link to the event before it (the first one to ``prev_hash``), when its version is not the
    next one (the first one must be ``start_version``) or when it belongs to another game than
    ``game_id`` (default: the first event's). The defaults check a whole log from its start; pass
    the version and hash of the event before a segment to check a segment. Upcast events are
    checked in their stored form.
    """
    expected_prev = prev_hash
    if game_id is None:
        game_id = events[0].game_id if events else ""
    for index, event in enumerate(events):
        stored = event.stored_form()
        if (
            stored.game_id != game_id
            or stored.version != start_version + index
            or stored.prev_hash != expected_prev
            or event.hash != stored.hash
            or event.prev_hash != stored.prev_hash
        ):
            return index
        try:
            digest = compute_hash(stored.hashed_fields())
        except ValueError:  # a CodecError: such a field cannot have been stored and hashed
            return index
        if digest != stored.hash:
            return index
        expected_prev = stored.hash
    return None


def _check_text(name: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty str, got {value!r}")


def _check_hash(name: str, value: object) -> None:
    if not (isinstance(value, str) and len(value) == 64 and HEX_DIGITS.issuperset(value)):
        raise ValueError(f"{name} must be 64 lower-case hex digits, got {value!r}")


def _check_new(event: NewEvent) -> None:
    _check_text("event type", event.type)
    if isinstance(event.schema, bool) or not isinstance(event.schema, int) or event.schema < 1:
        raise ValueError(f"schema of {event.type} must be an int >= 1, got {event.schema!r}")
    if event.actor is not None:
        _check_text(f"actor of {event.type}", event.actor)
    if not isinstance(event.data, Mapping):
        raise ValueError(f"data of {event.type} must be a mapping, got {type(event.data).__name__}")
