"""`rummy loadtest` against an in-process stack, over both transports: it plays real games and its
figures add up (every command timed, accepted ones counted, nothing refused by a healthy server)."""

from __future__ import annotations

import argparse

import pytest

from shared.cli.loadtest import loadtest
from tests.gateway.conftest import MakeStack


@pytest.mark.parametrize("transport", ["ws", "http"])
async def test_loadtest_plays_games_and_reports_figures(
    make_stack: MakeStack, transport: str
) -> None:
    stack = await make_stack(rate_per_second=0)
    args = argparse.Namespace(
        url=str(stack.server.make_url("")).rstrip("/"),
        games=3,
        duration=2.0,
        pace=None,
        rules="robbers",
        players=2,
        bot="random",
        metrics=[str(stack.server.make_url("/metrics"))],
        seed=1,
        transport=transport,
        redis=None,
    )
    figures = await loadtest(args)
    assert figures["transport"] == transport and figures["mode"] == "closed"
    assert figures["games_started"] >= 3
    assert figures["errors"] == {}
    assert figures["accepted"] >= 20, figures
    assert figures["commands"] == figures["accepted"]
    lat = figures["latency_ms"]
    assert 0 < lat["p50"] <= lat["p99"] <= lat["max"]
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
    args = argparse.Namespace(
        url=str(stack.server.make_url("")).rstrip("/"),
        games=4,
        duration=2.0,
        pace=0.25,
        rules="rummikub",
        players=2,
        bot="random",
        metrics=[],
        seed=2,
        transport="ws",
        redis=None,
    )
    figures = await loadtest(args)
    assert figures["mode"] == "open" and figures["errors"] == {}
    # Four games, one command each a quarter second, for two seconds: about 32 commands.
    assert 16 <= figures["commands"] <= 40, figures
