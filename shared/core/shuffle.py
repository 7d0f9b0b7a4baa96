"""The seeded shuffle: reproducible, checkable, and published (version ``rr-shuffle-v1``).

Fairness works by commitment. At creation the game stores only ``commitment(seed)`` (SHA-256 of
the secret server seed). Players may add seeds of their own when they sit down; those are public.
Every random choice of the game (cuts, deals, reshuffles) is a Fisher-Yates shuffle driven by a
byte stream that mixes both, so the server cannot pick its seed after seeing the players' seeds
and nobody can predict a deal without the server seed. When the game ends, ``SeedRevealed``
publishes the seed and anyone can recompute every deal and draw with this module alone.

The algorithm, version 1:
- key   = HMAC-SHA256(server_seed, "rr-shuffle-v1" || 0x00 || game_id || 0x00 ||
          player_seed_1 || 0x00 || ... ) (player seeds in seat order, UTF-8)
- block i of the stream for a purpose (e.g. ``"deal/1"``) = HMAC-SHA256(key, purpose || 0x00 ||
  i as 8 bytes big-endian), i = 0, 1, ...; the stream is the concatenation of the blocks.
- a uniform integer below n takes 4 bytes of the stream as a big-endian u32 and rejects values
  at or above the largest multiple of n below 2**32 (no modulo bias).
- Fisher-Yates: for i from len-1 down to 1, swap position i with position uniform(i + 1).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

ALGORITHM = "rr-shuffle-v1"
T = TypeVar("T")


def commitment(seed: bytes) -> str:
    """The public commitment to a secret seed: SHA-256, hex."""
    return hashlib.sha256(seed).hexdigest()


def shuffle_key(seed: bytes, game_id: str, player_seeds: Sequence[str]) -> bytes:
    """The key every stream of one game derives from (server seed mixed with player seeds)."""
    parts = [ALGORITHM, game_id, *player_seeds]
    return hmac.new(seed, b"\x00".join(p.encode() for p in parts), hashlib.sha256).digest()


def _stream(key: bytes, purpose: str) -> Iterator[int]:
    """Successive u32 values of the purpose's byte stream."""
    counter = 0
    prefix = purpose.encode() + b"\x00"
    while True:
        block = hmac.new(key, prefix + counter.to_bytes(8, "big"), hashlib.sha256).digest()
        for offset in range(0, 32, 4):
            yield int.from_bytes(block[offset : offset + 4], "big")
        counter += 1


def shuffled(items: Sequence[T], key: bytes, purpose: str) -> list[T]:
    """A Fisher-Yates shuffle of ``items`` driven by the stream of ``purpose``."""
    out = list(items)
    stream = _stream(key, purpose)
    for i in range(len(out) - 1, 0, -1):
        bound = i + 1
        limit = (1 << 32) - (1 << 32) % bound
        value = next(stream)
        while value >= limit:
            value = next(stream)
        j = value % bound
        out[i], out[j] = out[j], out[i]
    return out


class Shuffle(Protocol):
    """Where a game's random orders come from: ``order`` is the shuffle of ``items`` for
    ``purpose`` (``"deal/1"``, ``"cut/2"``, ``"reshuffle/40"``...). The rules ask this for every
    random choice, so a decision can be re-derived from any source that answers the same."""

    def order(self, items: Sequence[int], purpose: str) -> list[int]: ...


@dataclass(frozen=True, slots=True)
class SeededShuffle:
    """rr-shuffle-v1 under one game's key: the source the service plays with."""

    key: bytes

    def order(self, items: Sequence[int], purpose: str) -> list[int]:
        return shuffled(items, self.key, purpose)
