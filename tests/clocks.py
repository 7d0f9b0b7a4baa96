"""Time a test moves forward. The referees take their time from Redis (``shared/infra/clock.py``)
and only carry it between readings with their host clock, so moving a host clock alone moves
nothing for long: the next reading of Redis's time puts it back (as it should, for a host whose
clock is wrong). A test that wants time to pass moves both at once: ``Clock`` is the host clock
and ``clock.redis(client)`` is a client whose ``TIME`` runs the same offset ahead of Redis's.
"""

from __future__ import annotations

import time
from typing import Any


class Clock:
    """A host clock: real time plus an offset a test may advance."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds

    def redis(self, client: Any) -> Any:
        """``client`` as the services use it, but with Redis's time moved with this clock."""
        return ShiftedTime(client, self)


class ShiftedTime:
    """A Redis client whose ``TIME`` answers ``clock.offset`` seconds later than Redis's;
    everything else is the client's."""

    def __init__(self, client: Any, clock: Clock) -> None:
        self._client = client
        self._clock = clock

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def time(self, **kwargs: Any) -> tuple[int, int]:
        seconds, micros = await self._client.time(**kwargs)
        total = round(seconds * 1_000_000 + micros + self._clock.offset * 1_000_000)
        return total // 1_000_000, total % 1_000_000
