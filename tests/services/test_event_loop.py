"""The networked commands run on uvloop unless RUMMY_EVENT_LOOP=asyncio, and collect cyclic
garbage less often unless RUMMY_GC says otherwise (shared/cli/main.py). Each case runs in a
process of its own, as the settings are process-wide."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SHOW_LOOP = (
    "import asyncio; from shared.infra.runtime import fast_event_loop; fast_event_loop(); "
    "print(type(asyncio.new_event_loop()).__module__)"
)
SHOW_GC = (
    "import gc; from shared.infra.runtime import quiet_gc; quiet_gc(); print(gc.get_threshold())"
)


def _run(code: str, variable: str, value: str | None) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter with ``variable`` set to ``value`` (unset for None)."""
    env = {k: v for k, v in os.environ.items() if k != variable}
    if value is not None:
        env[variable] = value
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


@pytest.mark.parametrize(("choice", "module"), [(None, "uvloop"), ("asyncio", "asyncio")])
def test_the_event_loop_is_uvloop_unless_asked_otherwise(choice: str | None, module: str) -> None:
    out = _run(SHOW_LOOP, "RUMMY_EVENT_LOOP", choice).stdout
    assert out.strip().startswith(module), out


@pytest.mark.parametrize(
    ("setting", "shown"),
    [(None, "(50000, 20, 20)"), ("default", "(700, 10, 10)"), ("9000,5,5", "(9000, 5, 5)")],
)
def test_the_collector_runs_less_often_unless_asked_otherwise(
    setting: str | None, shown: str
) -> None:
    assert _run(SHOW_GC, "RUMMY_GC", setting).stdout.strip() == shown


@pytest.mark.parametrize("setting", ["lots", "0,10,10", "²,1,1", "1,2"])
def test_a_bad_collector_setting_is_refused_with_what_is_allowed(setting: str) -> None:
    run = _run(SHOW_GC, "RUMMY_GC", setting)
    assert run.returncode != 0
    assert f"RUMMY_GC is {setting!r}; allowed: 'default', or three whole numbers" in run.stderr


def test_the_settings_given_are_the_ones_used() -> None:
    """The process start reads ``Settings`` once and passes them down (a worker process spawned
    without them reads the environment it inherited, as above)."""
    code = (
        "import asyncio, gc; from shared.infra.runtime import fast_event_loop, quiet_gc; "
        "from shared.infra.settings import Settings; "
        "given = Settings(event_loop='asyncio', gc='7000,3,3'); "
        "fast_event_loop(given); quiet_gc(given); "
        "print(type(asyncio.new_event_loop()).__module__, gc.get_threshold())"
    )
    out = _run(code, "RUMMY_GC", "default").stdout  # (the environment says otherwise)
    assert out.strip().startswith("asyncio") and out.strip().endswith("(7000, 3, 3)"), out


@pytest.mark.parametrize(("variable", "value"), [("RUMMY_EVENT_LOOP", "trio"), ("RUMMY_GC", "x")])
def test_rummy_refuses_a_bad_process_setting_at_its_start(variable: str, value: str) -> None:
    env = {**os.environ, variable: value}
    ran = subprocess.run(
        [sys.executable, "-m", "services.main", "solve"],
        env=env,
        input='{"rules": "rummikub", "goal": "arrange", "cards": ["5H", "6H", "7H"]}',
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 2, ran.stdout
    assert f"rummy solve: {variable} is {value!r}; allowed:" in ran.stderr
