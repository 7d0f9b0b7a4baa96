"""`rummy serve` as a newcomer meets it: where it listens, and what a busy port says."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from services.serve import listen_address
from shared.infra.settings import Settings
from tests.ports import spare_port

ROOT = Path(__file__).resolve().parents[2]


def _args(host: str | None = None, port: int | None = None) -> argparse.Namespace:
    return argparse.Namespace(host=host, port=port)


def test_this_machine_on_8080_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RUMMY_HTTP_HOST", raising=False)
    monkeypatch.delenv("RUMMY_HTTP_PORT", raising=False)
    assert listen_address(_args(), Settings.from_env({})) == ("127.0.0.1", 8080)


def test_the_settings_are_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"RUMMY_HTTP_HOST": "0.0.0.0", "RUMMY_HTTP_PORT": "8091"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert listen_address(_args(), Settings.from_env(env)) == ("0.0.0.0", 8091)


def test_the_flags_win(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"RUMMY_HTTP_HOST": "0.0.0.0", "RUMMY_HTTP_PORT": "8091"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    chosen = listen_address(_args("127.0.0.2", 8092), Settings.from_env(env))
    assert chosen == ("127.0.0.2", 8092)


def test_a_busy_port_says_how_to_pick_another(tmp_path: Path) -> None:
    port = spare_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        env = {k: v for k, v in os.environ.items() if not k.startswith("RUMMY_")}
        env.pop("REDIS_URL", None)
        done = subprocess.run(
            [sys.executable, "-m", "services.main", "serve", "--port", str(port)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,  # a hang (the loops started before the port failed) fails here
        )
    assert done.returncode == 1, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "PORT=" in done.stderr and "--port" in done.stderr
