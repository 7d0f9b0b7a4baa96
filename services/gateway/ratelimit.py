"""A token bucket per token: a steady rate with bursts of twice that, in process memory (each
gateway limits what passes through it; with N gateways a token gets at most N times the rate)."""

from __future__ import annotations

import time
from collections import OrderedDict

MAX_BUCKETS = 200_000


class RateLimiter:
    """``allow(key)`` says whether one more request for ``key`` may pass now."""

    def __init__(self, per_second: float, burst: float | None = None) -> None:
        self.rate = per_second
        self.burst = burst if burst is not None else max(per_second * 2, 1.0)
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def allow(self, key: str, now: float | None = None) -> bool:
        """Take one token from ``key``'s bucket if there is one."""
        if self.rate <= 0:
            return True
        now = time.monotonic() if now is None else now
        level, last = self._buckets.get(key, (self.burst, now))
        level = min(self.burst, level + (now - last) * self.rate)
        allowed = level >= 1.0
        self._buckets[key] = (level - 1.0 if allowed else level, now)
        self._buckets.move_to_end(key)
        while len(self._buckets) > MAX_BUCKETS:
            self._buckets.popitem(last=False)
        return allowed
