"""The load bench's closing ratios: the stack against each bare pipeline, with and without the
clients' share, and the turn-shaped pipeline against the one-hop one (what a turn's messages
cost before any game logic)."""

from __future__ import annotations

import pytest

from tests.bench import load

STACK = "gateway + 2 referees + scoring"


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        load,
        "SATURATION",
        {
            STACK: (2000.0, [0.2, 0.05, 0.1, 0.1, 0.05, 0.2]),  # servers 0.5, tool 0.2
            load.BARE: (10000.0, [0.1, 0.04, 0.01, 0.05]),  # servers 0.15, clients 0.05
            load.BARE_TURN: (7000.0, [0.13, 0.07, 0.02, 0.06]),  # servers 0.22, clients 0.06
        },
    )


@pytest.mark.usefixtures("measured")
def test_the_stack_is_compared_with_and_without_the_clients() -> None:
    line = load.against_bare(STACK)
    assert "saturation 2,000 / 10,000 turns/s = 0.20x (target >= 0.6x)" in line
    assert "CPU per turn 0.700 / 0.200 ms = 3.50x (target <= 1.5x)" in line
    assert "without the clients 0.500 / 0.150 ms = 3.33x" in line


@pytest.mark.usefixtures("measured")
def test_the_targets_are_named_only_for_the_stack_against_the_one_hop_pipeline() -> None:
    against_turn = load.against_bare(STACK, load.BARE_TURN)
    assert "= 0.29x;" in against_turn and "target" not in against_turn
    floor = load.against_bare(load.BARE_TURN)
    assert floor.startswith(f"{load.BARE_TURN} against the {load.BARE}")
    assert "saturation 7,000 / 10,000 turns/s = 0.70x;" in floor
    assert "0.280 / 0.200 ms = 1.40x, without the clients 0.220 / 0.150 ms = 1.47x" in floor
    assert "target" not in floor


def test_nothing_is_compared_without_both_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load, "SATURATION", {STACK: (2000.0, [0.5, 0.2])})
    assert load.against_bare(STACK) == ""
