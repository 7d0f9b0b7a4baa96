"""The benches' ``--plot`` charts carry what they measured: each figure is read back from the
picture exactly (the charts' ``data-points``)."""

from __future__ import annotations

import pytest

from tests.bench import load, soak
from tests.pictures.test_chart import drawn_series


def test_the_load_bench_plots_rate_and_p99_per_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    measured = {
        ("services", "closed"): [(10, 120.0, 4.5), (50, 310.5, 9.25)],
        ("bare", "open 1/s"): [(100, 99.0, 2.0)],
    }
    monkeypatch.setattr(load, "MEASURED", measured)
    drawn = drawn_series(load.plot())
    assert drawn["Accepted turns a second"] == {
        "services, closed": [(10, 120.0), (50, 310.5)],
        "bare, open 1/s": [(100, 99.0)],
    }
    assert drawn["Latency, p99"]["services, closed"] == [(10, 4.5), (50, 9.25)]


def test_the_soak_bench_plots_memory_and_write_latency() -> None:
    mb = 1024 * 1024
    memory = [(0, 2 * mb), (10, 3 * mb), (20, 2 * mb)]
    drawn = drawn_series(soak.plot(memory, [0.004, 0.001, 0.002, 0.003], 40 * mb, 20))
    assert drawn["Redis used_memory"]["with retention"] == [(0, 2.0), (10, 3.0), (20, 2.0)]
    assert drawn["Redis used_memory"]["20 games live"] == [(0, 40.0), (20, 40.0)]
    assert drawn["Archive write latency"]["write"] == [(25, 1.0), (50, 2.0), (75, 3.0), (100, 4.0)]
