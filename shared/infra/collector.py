"""The cyclic collector's full walks kept to what is new since the last one.

A full collection walks every tracked object of the process. A service holding 5,000 live games
and 10,000 sockets has a heap of a million objects, almost all of them alive for minutes and
freed by reference counting when they go; each full walk of them took 160-410 ms, a pause every
request in flight waits out, and the services reached their thresholds at the same moment.

After each full collection, what survived it is frozen (``gc.freeze``): later walks skip it, so
a full collection costs what was promoted since the last one, whatever the heap's size. What is
frozen and later dies is still freed by reference counting; only what dies in a reference cycle
would stay, so the freezer lets one collection walk the whole heap again (``gc.unfreeze``)
whenever the frozen heap has grown past ``regrowth`` times its size at the last whole walk
(and by at least ``slack`` objects): cyclic garbage is then freed, at the cost of one whole walk
each time the heap doubles, and memory stays within that factor of what is alive.
"""

from __future__ import annotations

import gc
from typing import Any, Protocol

FULL = 2  # the oldest generation's number: its collections walk the whole (unfrozen) heap


class Collector(Protocol):
    """The part of the ``gc`` module the freezer uses (a test gives its own)."""

    def freeze(self) -> None: ...

    def unfreeze(self) -> None: ...

    def get_freeze_count(self) -> int: ...


class Freezer:
    """A ``gc.callbacks`` entry: freeze what each full collection leaves, and walk it all again
    once the frozen heap has grown by ``regrowth`` since the last whole walk."""

    def __init__(
        self, collector: Collector | None = None, regrowth: float = 2.0, slack: int = 100_000
    ) -> None:
        self.collector: Collector = gc if collector is None else collector
        self.regrowth = regrowth
        self.slack = slack
        self.baseline = self.collector.get_freeze_count()  # the frozen heap at the last whole walk
        self.whole = True  # whether the next full collection walks everything not frozen at start
        self.freezes = 0
        self.whole_walks = 0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info.get("generation") != FULL:
            return
        self.collector.freeze()
        self.freezes += 1
        frozen = self.collector.get_freeze_count()
        if self.whole:
            self.whole = False
            self.whole_walks += 1
            self.baseline = frozen
        elif frozen > self.baseline * self.regrowth and frozen > self.baseline + self.slack:
            self.collector.unfreeze()  # the next full collection walks the whole heap
            self.whole = True


def install(freezer: Freezer | None = None) -> Freezer:
    """Have ``freezer`` (a new one if not given) follow every collection of this process; once
    only: a second call returns the one installed."""
    for callback in gc.callbacks:
        if isinstance(callback, Freezer):
            return callback
    chosen = Freezer() if freezer is None else freezer
    gc.callbacks.append(chosen)
    return chosen
