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
