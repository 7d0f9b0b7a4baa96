"""Whether the archive answers, as last known: what the archiver's passes and checks found, read
by ``/readyz`` without a call of its own (``shared/infra/readiness.py``, as Redis's is kept).

Why: a pass asks the archive only when a game is due or kept; left to the passes, an archive
that goes away while none is would go unnoticed, and the archiver ready through the outage.
Between passes, an archive nobody asked for ``CHECK_SECONDS`` is asked the cheapest question it
answers (its schema version: one small row), within ``CHECK_TIMEOUT``: one call every few
seconds at most, none while the passes keep it busy. A pass stuck on an archive that does not
answer reports nothing, so an answer older than ``SILENT_SECONDS`` is not ready either.
"""

from __future__ import annotations

from collections.abc import Callable

from shared.archive.base import Archive
from shared.infra.readiness import Readiness

CHECK_SECONDS = 5.0  # an archive not asked for this long is checked
CHECK_TIMEOUT = 2.0  # a check not answered within this has failed
SILENT_SECONDS = 30.0  # no answer for this long (a pass stuck on the archive): not ready


class ArchiveReach(Readiness):
    """The last known outcome of the archive's round trips, and when it was last asked."""

    def __init__(self, clock: Callable[[], float]) -> None:
        """``clock``: monotonic seconds (tests step one)."""
        super().__init__(SILENT_SECONDS, clock, what="the archive", tag="archive")
        self.problem = "the archive is not open yet"
        self.asked_at: float | None = None  # when the last round trip ended, answered or not

    def reached(self) -> None:
        super().reached()
        self.asked_at = self.reached_at

    def failed(self, why: str) -> None:
        super().failed(why)
        self.asked_at = self.clock()

    def check_due(self) -> bool:
        """Whether nothing has asked the archive for ``CHECK_SECONDS``."""
        return self.asked_at is None or self.clock() - self.asked_at >= CHECK_SECONDS

    async def check_archive(self, archive: Archive) -> None:
        """Ask ``archive`` its schema version, the outcome noted."""
        await self.check(archive.schema_version, within=CHECK_TIMEOUT)

    def trouble(self) -> str | None:
        """Why the archive is not ready, or None when it answered recently enough."""
        ready, why = self.answer("")
        return None if ready else why
