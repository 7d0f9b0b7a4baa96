"""`rummy loadtest` against an in-process stack, over both transports: it plays real games and its
figures add up (every command timed, accepted ones counted, nothing refused by a healthy server)."""

from __future__ import annotations

import argparse
import asyncio
import json
import random
from typing import Any

import pytest

from shared.cli.loadtest import Figures, _SocketGame, loadtest
from tests.gateway.conftest import MakeStack, Stack


def run_args(stack: Stack, **given: Any) -> argparse.Namespace:
    """`rummy loadtest`'s arguments against the stack: these defaults, ``given`` over them."""
    defaults: dict[str, Any] = {
        "pace": None,
        "rules": "robbers",
        "players": 2,
        "bot": "random",
        "metrics": [],
        "transport": "ws",
        "redis": None,
        "compress": False,
    }
    url = str(stack.server.make_url("")).rstrip("/")
    return argparse.Namespace(url=url, **(defaults | given))


@pytest.mark.parametrize("transport", ["ws", "http"])
async def test_loadtest_plays_games_and_reports_figures(
    make_stack: MakeStack, transport: str
) -> None:
    stack = await make_stack(rate_per_second=0)
    args = run_args(
        stack,
        games=3,
        duration=2.0,
        metrics=[str(stack.server.make_url("/metrics"))],
        seed=1,
        transport=transport,
    )
    figures = await loadtest(args)
    assert figures["transport"] == transport and figures["mode"] == "closed"
    assert figures["games_started"] >= 3
    assert figures["errors"] == {}
    assert figures["accepted"] >= 20, figures
    assert figures["commands"] == figures["accepted"]
    lat = figures["latency_ms"]
    assert 0 < lat["p50"] <= lat["p90"] <= lat["p95"] <= lat["p99"] <= lat["p99.9"] <= lat["max"]
    assert next(iter(figures["memory_bytes"].values())) > 10_000_000
    # CPU per turn of the service (here everything runs in this process) and of the load tool.
    cpu = figures["cpu_ms_per_turn"]
    assert set(cpu) == {*args.metrics, "loadtest"}
    assert all(isinstance(v, float) and v > 0 for v in cpu.values()), cpu
    # Every accepted command is in the games' logs (one event or more each).
    referee_seen = stack.referee.metrics.commands
    accepted = sum(
        sample.value
        for metric in referee_seen.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
        and sample.labels["status"] == "accepted"
        and sample.labels["kind"] in ("draw", "play", "pass", "end", "discard")
    )
    assert accepted >= figures["accepted"]


async def test_open_loop_paces_each_game(make_stack: MakeStack) -> None:
    stack = await make_stack(rate_per_second=0)
    args = run_args(stack, games=4, duration=2.0, pace=0.25, rules="rummikub", seed=2)
    measured = Figures()
    figures = await loadtest(args, measured)
    assert figures["mode"] == "open" and figures["errors"] == {}
    # Four games, one command each a quarter second, for two seconds: about 32 commands.
    assert 16 <= figures["commands"] <= 40, figures
    # Each command was sent at or after its due time, none before the clock; how late the
    # tool was is a figure of its own.
    assert len(measured.late) == figures["commands"] and min(measured.late) >= 0
    assert min(measured.sent) >= 0
    late = figures["send_late_ms"]
    assert 0 <= late["p99"] <= late["max"] == round(max(measured.late) * 1000, 2)


async def test_loadtest_draws_its_bar_only_on_a_terminal(
    make_stack: MakeStack, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import shared.cli.progress as progress

    stack = await make_stack(rate_per_second=0)
    args = run_args(stack, games=2, duration=1.0, seed=2, transport="http")
    await loadtest(args)
    assert "load:" not in capsys.readouterr().err  # the captured stderr is no terminal
    monkeypatch.setattr(progress, "terminal", lambda stream: True)
    figures = await loadtest(args)
    err = capsys.readouterr().err
    assert figures["accepted"] > 0
    assert "load:" in err and "/1 s [" in err and "turns/s" in err, err


async def test_loadtest_plots_what_it_measured(make_stack: MakeStack) -> None:
    from shared.cli.loadtest import Figures, plot
    from tests.pictures.test_chart import drawn_series

    stack = await make_stack(rate_per_second=0)
    args = run_args(stack, games=2, duration=1.5, seed=3)
    figures = Figures()
    result = await loadtest(args, figures)
    drawn = drawn_series(plot(result, figures))
    rate = drawn["Accepted turns per second"]["accepted"]
    assert len(rate) >= 2
    # Each look's rate over the time since the one before: together, every accepted turn.
    times = [0.0, *[t for t, _ in rate]]
    total = sum(r * (b - a) for (b, r), a in zip(rate, times, strict=False))
    assert total == pytest.approx(result["accepted"], rel=0.01)
    latency = drawn["Command latency"]
    assert latency["median"] and len(latency["median"]) == len(latency["slowest"])
    assert all(m <= s for (_, m), (_, s) in zip(latency["median"], latency["slowest"], strict=True))
    assert max(s for _, s in latency["slowest"]) == pytest.approx(result["latency_ms"]["max"], 0.01)


@pytest.mark.parametrize("transport", ["ws", "http"])
async def test_open_loop_sends_nothing_due_after_the_duration(
    make_stack: MakeStack, transport: str
) -> None:
    """With a pace longer than the run, each game's one command falls inside the run or is not
    sent: a command due after ``--duration`` would stretch the run by up to a pace."""
    stack = await make_stack(rate_per_second=0)
    args = run_args(stack, games=3, duration=0.5, pace=30.0, seed=4, transport=transport)
    # Each game's first command is due at its offset into the pace (the slot's first draw).
    # The seed puts every one after the run's end, so none may be sent, however slow the
    # machine (a slower one only sends later).
    due = [random.Random(args.seed * 100_003 + slot).random() * args.pace for slot in range(3)]
    assert min(due) > args.duration, due
    figures = await loadtest(args)
    assert figures["errors"] == {}
    assert figures["commands"] == 0, (figures, due)


async def test_no_socket_closes_while_a_command_of_the_run_is_in_flight(
    make_stack: MakeStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The games live at the end close after every slot is done: closing thousands of sockets
    at once while another game's last command is in flight is measured as its latency."""
    stack = await make_stack(rate_per_second=0)
    args = run_args(stack, games=2, duration=1.0, pace=30.0, seed=225)
    # Slot 0's one command is due 0.22 s in, slot 1's after the end (so it ends at the end).
    due = [random.Random(args.seed * 100_003 + slot).random() * args.pace for slot in range(2)]
    assert due[0] < 0.3 and due[1] > 2 * args.duration, due
    figures = Figures()
    closes: list[int] = []  # commands answered when each game closed
    real_send, real_close = _SocketGame.send, _SocketGame.close

    async def late_send(self: _SocketGame, seat: int, body: dict[str, Any]) -> Any:
        await asyncio.sleep(args.duration)  # the answer comes after the run's end
        return await real_send(self, seat, body)

    async def counted_close(self: _SocketGame) -> None:
        closes.append(len(figures.latencies))
        await real_close(self)

    monkeypatch.setattr(_SocketGame, "send", late_send)
    monkeypatch.setattr(_SocketGame, "close", counted_close)
    result = await loadtest(args, figures)
    assert result["errors"] == {} and result["commands"] == 1, result
    assert closes == [1, 1], "a game's sockets closed before the last command was answered"


async def test_a_command_never_answered_is_counted_and_the_game_left(
    make_stack: MakeStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command whose answer does not come within the tool's wait is an error of its own kind
    (not a latency), and its game is left for a new one."""
    import shared.cli.loadtest as tool

    async def unanswered(self: _SocketGame, seat: int, body: dict[str, Any]) -> Any:
        await asyncio.Event().wait()  # (the answer never comes)

    monkeypatch.setattr(tool, "ANSWER_WAIT", 0.2)
    monkeypatch.setattr(_SocketGame, "send", unanswered)
    stack = await make_stack(rate_per_second=0)
    figures = await loadtest(run_args(stack, games=1, duration=1.0, seed=3))
    assert figures["accepted"] == 0 and figures["latency_ms"]["max"] == 0, figures
    assert figures["errors"].get("no_answer (TimeoutError)", 0) >= 2, figures["errors"]
    assert figures["games_started"] >= 2, figures


class _Frames:
    """A socket's received frames, as aiohttp's client socket yields them."""

    def __init__(self, docs: list[dict[str, Any]]) -> None:
        self.docs = docs

    async def __aiter__(self) -> Any:
        for doc in self.docs:
            yield argparse.Namespace(data=json.dumps(doc))


def _view(version: int, round_number: int, status: str = "playing") -> dict[str, Any]:
    return {"type": "view", "view": {"version": version, "round": round_number, "status": status}}


async def test_a_game_counts_the_round_ends_its_views_show() -> None:
    """Round ends are counted once a game (from seat 0's views): each step of the round number,
    and the last round when the match ends; the set-up's are forgotten at the clock's start."""
    game = _SocketGame(None, argparse.Namespace(), "g1", ["t0", "t1"])
    shown = [_view(3, 1), _view(9, 1), _view(20, 2), _view(25, 2), _view(31, 2, "finished")]
    await game._read(0, _Frames(shown))
    await game._read(1, _Frames(shown))
    assert game.rounds_ended == 2
    assert game.frames["view"] == 10
    game.start_clock()
    assert game.rounds_ended == 0 and not game.frames
    await game._read(0, _Frames([_view(40, 3), _view(30, 1)]))  # an older view changes nothing
    assert game.rounds_ended == 1
