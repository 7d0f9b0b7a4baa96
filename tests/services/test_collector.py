"""The freezer (shared/infra/collector.py): each full collection's survivors are frozen out of
later walks, and the whole heap is walked again once the frozen part has doubled, so cyclic
garbage that died frozen is freed. The real collector's cases run in a process of their own
(the callbacks and the frozen heap are process-wide)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

from shared.infra.collector import Freezer


class FakeCollector:
    """A frozen heap of ``frozen`` objects; ``live`` of them would survive a whole walk."""

    def __init__(self, frozen: int) -> None:
        self.frozen = frozen
        self.young = 0  # what survives the next collection, not frozen yet
        self.unfrozen = False
        self.calls: list[str] = []

    def freeze(self) -> None:
        self.calls.append("freeze")
        self.frozen += self.young
        self.young = 0

    def unfreeze(self) -> None:
        self.calls.append("unfreeze")
        self.unfrozen = True

    def get_freeze_count(self) -> int:
        return self.frozen


def full(freezer: Freezer) -> None:
    freezer("start", {"generation": 2, "collected": 0, "uncollectable": 0})
    freezer("stop", {"generation": 2, "collected": 0, "uncollectable": 0})


def test_only_the_end_of_a_full_collection_freezes() -> None:
    fake = FakeCollector(1_000)
    freezer = Freezer(fake)
    for generation in (0, 1):
        freezer("start", {"generation": generation})
        freezer("stop", {"generation": generation})
    freezer("start", {"generation": 2})
    assert fake.calls == []
    freezer("stop", {"generation": 2})
    assert fake.calls == ["freeze"] and freezer.freezes == 1


def test_the_whole_heap_is_walked_again_once_the_frozen_part_has_doubled() -> None:
    fake = FakeCollector(10_000)
    freezer = Freezer(fake, regrowth=2.0, slack=1_000)
    fake.young = 190_000
    full(freezer)  # the first full collection walked everything since the start
    assert freezer.baseline == 200_000 and fake.calls == ["freeze"]
    fake.young = 150_000  # 350,000 frozen: under twice 200,000
    full(freezer)
    assert fake.calls == ["freeze", "freeze"]
    fake.young = 60_000  # 410,000: past it
    full(freezer)
    assert fake.calls == ["freeze", "freeze", "freeze", "unfreeze"] and freezer.whole
    # The next full collection walks it all: what it leaves is the new baseline.
    fake.frozen, fake.young = 0, 300_000
    full(freezer)
    assert freezer.baseline == 300_000 and not freezer.whole
    assert fake.calls[-1] == "freeze" and freezer.whole_walks == 2


def test_growth_under_the_slack_walks_nothing_again() -> None:
    fake = FakeCollector(100)
    freezer = Freezer(fake, regrowth=2.0, slack=100_000)
    full(freezer)
    fake.young = 50_000  # 500 times the baseline, but only 50,000 objects
    full(freezer)
    assert "unfreeze" not in fake.calls


def run(code: str) -> str:
    """``code`` in a fresh interpreter; its standard output."""
    ran = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.strip()


def test_a_service_process_freezes_what_a_full_collection_leaves() -> None:
    out = run(
        """
        import gc
        from shared.infra.runtime import quiet_gc
        from shared.infra.settings import Settings
        quiet_gc(Settings())
        before = gc.get_freeze_count()
        kept = [[i] for i in range(200_000)]
        gc.collect()
        walked = {id(o) for o in gc.get_objects()}
        print(gc.get_freeze_count() - before >= 200_000, id(kept[7]) in walked)
        """
    )
    assert out == "True False", out


def test_python_s_own_collector_is_left_alone_when_asked() -> None:
    out = run(
        """
        import gc
        from shared.infra.runtime import quiet_gc
        from shared.infra.settings import Settings
        quiet_gc(Settings(gc="default"))
        kept = [[i] for i in range(1_000)]
        gc.collect()
        print(gc.get_freeze_count(), any(type(c).__name__ == "Freezer" for c in gc.callbacks))
        """
    )
    assert out == "0 False", out


def test_cycles_that_died_frozen_are_freed_once_the_heap_has_doubled() -> None:
    out: Any = run(
        """
        import gc, weakref
        from shared.infra import collector
        class Node:
            pass
        def cycles(n):
            made = []
            for _ in range(n):
                node = Node()
                node.me = node  # a cycle: only the collector frees it
                made.append(node)
            return made
        gc.disable()
        gc.collect()
        gc.freeze()
        freezer = collector.install(collector.Freezer(regrowth=2.0, slack=1_000))
        doomed = cycles(5_000)
        watch = weakref.ref(doomed[0])
        gc.collect()  # the first whole walk: the cycles are alive, and frozen after it
        del doomed
        gc.collect()
        print("kept while frozen:", watch() is not None)
        grown = [[i] for i in range(3 * gc.get_freeze_count())]
        gc.collect()  # frozen heap past twice the baseline: unfrozen after this one
        gc.collect()  # this one walks everything
        print("freed after the whole walk:", watch() is None, freezer.whole_walks)
        """
    )
    assert out.splitlines() == ["kept while frozen: True", "freed after the whole walk: True 2"]
