"""The values of an audit: a receipt a player kept, one verdict per check, all verdicts on a
game (and which event is the first bad one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

CHECKS = ("chain", "head", "header", "receipts", "replay", "seed", "scores")
Status = Literal["ok", "failed", "pending", "skipped", "incomplete"]
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True, slots=True)
class Receipt:
    """A chain head a player kept: the ``version`` and ``head`` hash of a view or an answer."""

    version: int
    hash: str

    @classmethod
    def parse(cls, text: str) -> Receipt:
        """``VERSION:HASH`` (64 lower-case hex digits); ``ValueError`` quoting the text."""
        version, sep, digest = text.strip().partition(":")
        digest = digest.strip().lower()
        if (
            not sep
            or not version.strip().isdigit()
            or int(version) < 1
            or len(digest) != 64
            or not _HEX.issuperset(digest)
        ):
            raise ValueError(
                f"receipt {text!r} is not VERSION:HASH (a version from 1 and the 64 hex digits "
                "of the head hash, e.g. 12:9f3c...)"
            )
        return cls(int(version), digest)

    def __str__(self) -> str:
        return f"{self.version}:{self.hash}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of one check. ``version`` is the first bad event when it failed."""

    check: str
    status: Status
    message: str
    version: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": self.status,
            "ok": not self.failed,
            "version": self.version,
            "message": self.message,
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class Audit:
    """Every verdict on one game."""

    game_id: str
    events: int
    head: tuple[int, str] | None
    verdicts: tuple[Verdict, ...]

    @property
    def ok(self) -> bool:
        return not any(v.failed for v in self.verdicts)

    def verdict(self, check: str) -> Verdict:
        return next(v for v in self.verdicts if v.check == check)

    def first_bad(self) -> Verdict | None:
        """The failed verdict naming the earliest event (the first failed one if none names
        an event)."""
        failed = [v for v in self.verdicts if v.failed]
        if not failed:
            return None
        located = [v for v in failed if v.version is not None]
        if located:
            return min(located, key=lambda v: v.version or 0)
        return failed[0]

    def to_json(self) -> dict[str, Any]:
        bad = self.first_bad()
        return {
            "game_id": self.game_id,
            "events": self.events,
            "head": None if self.head is None else {"version": self.head[0], "hash": self.head[1]},
            "ok": self.ok,
            "first_bad_version": bad.version if bad else None,
            "verdicts": [v.to_json() for v in self.verdicts],
        }


def short(digest: str) -> str:
    return digest[:12] + "…" if len(digest) > 12 else digest
