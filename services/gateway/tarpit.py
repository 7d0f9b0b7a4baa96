"""Refusals that take their time: a request refused by a rate limit is answered only after a
short hold (``RUMMY_REFUSAL_DELAY`` seconds, at most its ``Retry-After``).

Why: a refusal is cheap but not free (parsing the request, the check, the answer), and a client
that loops on its refusals as fast as it can would spend the gateway's time on nothing but them;
every other client waits behind them in the same event loop. Held, a looping client sends one
request per hold per connection instead of thousands a second, and a well-behaved client, which
waits ``Retry-After`` anyway, loses nothing: the figure it reads counts from when the refusal
is sent, the hold already spent (``ratelimit.RateLimited``). A hold is an idle timer, not work,
and each client address has at most ``RUMMY_REFUSALS_HELD`` refusals held at once; past that it
is answered at once, so holds cannot pile up without bound either.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

Sleep = Callable[[float], Awaitable[None]]


class Tarpit:
    """The refusals being held, by client address."""

    def __init__(self, delay: float, per_address: int, sleep: Sleep = asyncio.sleep) -> None:
        self.delay = delay
        self.per_address = per_address
        self.sleep = sleep
        self.held: dict[str, int] = {}

    async def hold(self, address: str, retry_after: float) -> None:
        """Wait before a refusal to ``address`` is sent (not at all past its bound)."""
        seconds = min(self.delay, retry_after)
        if seconds <= 0 or self.held.get(address, 0) >= self.per_address:
            return
        self.held[address] = self.held.get(address, 0) + 1
        try:
            await self.sleep(seconds)
        finally:
            if (left := self.held.pop(address, 1) - 1) > 0:
                self.held[address] = left
