"""The long commands' progress bars: silent when stderr is not a terminal (a pipe, a file, CI),
drawn with the count and an ETA when it is (a stream that says it is a terminal, and a real
pseudo-terminal around `rummy simulate`); `rummy audit --all` and `rummy rebuild` draw theirs."""

from __future__ import annotations

import fcntl
import io
import itertools
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import uuid
from collections.abc import Iterator
from pathlib import Path

import fakeredis
import pytest

import shared.cli.audit as cli
import shared.cli.progress as progress
from services.main import main
from shared.audit.record import build_record, dumps
from tests.audit.games import Game, play_game

ROOT = Path(__file__).resolve().parents[2]


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_a_bar_off_a_terminal_writes_nothing() -> None:
    for stream in (io.StringIO(), Terminal()):
        quiet = not isinstance(stream, Terminal)
        with progress.bar(5, "games", unit="game", stream=stream, quiet=False) as shown:
            for _ in range(5):
                shown.update(1)
        assert (stream.getvalue() == "") == quiet, stream.getvalue()
    told = Terminal()
    with progress.bar(5, "games", stream=told, quiet=True) as shown:
        shown.update(5)
    assert told.getvalue() == ""


def test_a_bar_on_a_terminal_shows_the_count_and_the_time_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The bar's clock, not the machine's: a hundredth of a second per look, so the elapsed
    # time, the ETA and the rate it shows are the same on a busy machine.
    ticks = itertools.count()
    monkeypatch.setattr("tqdm.std.time", lambda: next(ticks) / 100)
    stream = Terminal()
    with progress.bar(4, "games", unit="game", stream=stream) as shown:
        for _ in range(4):
            shown.update(1)
    last = stream.getvalue().split("\r")[-1]
    assert last.startswith("games: 100%") and "4/4" in last, last
    assert "<00:00" in last and "game/s" in last, last  # elapsed<remaining: the ETA


def test_a_closed_or_plain_stream_is_no_terminal() -> None:
    closed = open(os.devnull, "w")  # noqa: SIM115 - closed at once: its isatty raises
    closed.close()
    assert not progress.terminal(closed)
    assert not progress.terminal(io.StringIO())
    assert progress.terminal(Terminal())


def _simulate(stderr: int) -> subprocess.Popen[bytes]:
    clean = {k: v for k, v in os.environ.items() if k != "REDIS_URL" and not k.startswith("RUMMY_")}
    args = ["simulate", "--games", "3", "--players", "2", "--rules", "robbers-classic", "--json"]
    return subprocess.Popen(
        [sys.executable, "-m", "services.main", *args],
        cwd=ROOT,
        env=clean | {"PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=stderr,
    )


def test_simulate_draws_its_bar_on_a_pseudo_terminal_only() -> None:
    master, slave = pty.openpty()
    # A new pseudo-terminal is 0 columns wide: give it a watcher's width.
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    try:
        child = _simulate(slave)
        os.close(slave)
        seen = b""
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            seen += chunk
        out, _ = child.communicate(timeout=60)
    finally:
        os.close(master)
    assert child.returncode == 0 and b'"games": 3' in out
    text = seen.decode(errors="replace")
    assert "games: 100%" in text and "3/3" in text, text
    piped = _simulate(subprocess.PIPE)
    out, err = piped.communicate(timeout=60)
    assert piped.returncode == 0 and b'"games": 3' in out
    assert err == b"", err  # a pipe: not even a carriage return


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The store commands talk to one private fakeredis server under a unique prefix."""
    server = fakeredis.FakeServer()
    prefix = f"wt-table:{uuid.uuid4().hex[:8]}:"
    monkeypatch.setattr(
        cli, "open_client", lambda: (fakeredis.aioredis.FakeRedis(server=server), prefix)
    )
    yield prefix


def _games() -> list[Game]:
    return [play_game(900 + k, "robbers-classic", {}, ("clumsy", "random"), 0.0, k) for k in (1, 2)]


def test_audit_all_and_rebuild_draw_their_bars_on_a_terminal(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for game in _games():
        path = tmp_path / f"{game.game_id}.rrec"
        path.write_text(dumps(build_record(game.events, exported=0.0)), encoding="utf-8")
        assert main(["import", str(path)]) == 0
    capsys.readouterr()
    # Off a terminal (the captured stderr): no bar.
    assert main(["audit", "--all"]) == 0
    assert "games audited" not in capsys.readouterr().err
    monkeypatch.setattr(progress, "terminal", lambda stream: True)
    assert main(["audit", "--all"]) == 0
    err = capsys.readouterr().err
    assert "games audited: 100%" in err and "2/2" in err, err
    assert main(["audit", _games()[0].game_id]) == 0  # one game: no bar
    assert "games audited" not in capsys.readouterr().err
    main(["rebuild"])
    err = capsys.readouterr().err
    assert "games rebuilt" in err and "2/2" in err, err
