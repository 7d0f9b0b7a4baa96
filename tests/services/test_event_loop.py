"""The services run on uvloop unless RUMMY_EVENT_LOOP=asyncio (shared/cli/main.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SHOW = (
    "import asyncio; from shared.cli.main import fast_event_loop; fast_event_loop(); "
    "print(type(asyncio.new_event_loop()).__module__)"
)


@pytest.mark.parametrize(("choice", "module"), [(None, "uvloop"), ("asyncio", "asyncio")])
def test_the_event_loop_is_uvloop_unless_asked_otherwise(choice: str | None, module: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "RUMMY_EVENT_LOOP"}
    if choice is not None:
        env["RUMMY_EVENT_LOOP"] = choice
    out = subprocess.run(
        [sys.executable, "-c", SHOW], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().startswith(module), out


GC_SHOW = "import gc; from shared.cli.main import quiet_gc; quiet_gc(); print(gc.get_threshold())"


@pytest.mark.parametrize(
    ("setting", "shown"),
    [(None, "(50000, 20, 20)"), ("default", "(700, 10, 10)"), ("9000,5,5", "(9000, 5, 5)")],
)
def test_the_collector_runs_less_often_unless_asked_otherwise(
    setting: str | None, shown: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "RUMMY_GC"}
    if setting is not None:
        env["RUMMY_GC"] = setting
    out = subprocess.run(
        [sys.executable, "-c", GC_SHOW], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == shown


def test_a_bad_collector_setting_is_refused_with_what_is_allowed() -> None:
    env = {**os.environ, "RUMMY_GC": "lots"}
    run = subprocess.run([sys.executable, "-c", GC_SHOW], env=env, capture_output=True, text=True)
    assert run.returncode != 0
    assert "RUMMY_GC is 'lots'; allowed: 'default', or three whole numbers" in run.stderr
