"""How the archive keeps a record, whatever it is the record of (a game, a tournament): its text
compressed beside the text's SHA-256, so that a read which does not give back those very bytes
fails loudly rather than hand out a record that is not the one stored; and a row ready to store,
which knows whether it extends the history archived before it.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

COMPRESSION = 6  # zlib level: records are JSON Lines, about a tenth of their size compressed


class ArchiveError(Exception):
    """The archive cannot do what was asked (the record is not archivable, the data read back
    is not what was stored, the backend failed)."""


class ArchiveConflict(ArchiveError):
    """It is archived already with another history (a chain head the record does not
    extend)."""


class Headed(Protocol):
    """What the archive's index says of a stored log: how many events, and the last one's
    hash."""

    @property
    def events(self) -> int: ...

    @property
    def head(self) -> str: ...


E = TypeVar("E", bound=Headed)


@dataclass(frozen=True, slots=True)
class Row(Generic[E]):
    """A record ready to store: its entry, its compressed text, the text's SHA-256 and each
    event's hash by version (its chain, checked when the entry was made)."""

    entry: E
    blob: bytes
    digest: str
    hashes: tuple[str, ...]

    def extends(self, stored: Headed) -> bool:
        """Whether this record is ``stored``'s history with more events after it: its chain
        holds ``stored``'s head at its version (each hash covers every event before it)."""
        version = stored.events
        return 0 < version < len(self.hashes) and self.hashes[version - 1] == stored.head


def seal(text: str) -> tuple[bytes, str]:
    """The stored form of a record's text: compressed, and the text's SHA-256."""
    raw = text.encode()
    return zlib.compress(raw, COMPRESSION), hashlib.sha256(raw).hexdigest()


def unseal(what: str, blob: bytes, digest: str) -> str:
    """The text stored as ``blob``; :class:`ArchiveError` naming ``what`` (``game g1``) if it is
    not the text stored."""
    try:
        raw = zlib.decompress(blob)
    except zlib.error as err:
        raise ArchiveError(f"{what}: the archived record is damaged ({err})") from None
    if hashlib.sha256(raw).hexdigest() != digest:
        raise ArchiveError(f"{what}: the archived record is not the one stored")
    return raw.decode()
