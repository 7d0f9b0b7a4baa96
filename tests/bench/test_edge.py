"""The edge bench runs end to end with tiny parameters and prints its table (one row per
attack, every column filled). Its figures are not checked: they are the machine's."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench import edge

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_the_edge_bench_prints_its_table() -> None:
    if shutil.which("redis-server") is None:
        pytest.skip("the bench runs a private redis-server")
    arguments = ["--seconds", "1", "--rounds", "1", "--push-grace", "0.5"]
    arguments += ["--replay-events", "60", "--slow-events", "60"]
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests/bench/edge.py"), *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,  # a hang fails; not the thing checked
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = done.stdout[done.stdout.index(edge.HEADER) :].splitlines()
    assert table[1] == edge.RULE
    rows = [line.split(" | ") for line in table[2:] if line.startswith("| ")]
    assert [cells[0].strip("| ") for cells in rows] == list(edge.ATTACKS), table
    columns = edge.HEADER.count(" | ") + 1
    for cells in rows:
        assert len(cells) == columns and all(cell.strip("| ") for cell in cells), cells
        assert cells[-1].strip("| ").startswith(("hold", "FAIL")), cells
    hint = rows[0]
    assert "within 2.5 s" in hint[6], hint  # each hint's time against its budget + 0.5 s
