"""``rummy replay --svg FILE``: the turn drawn into a file, as the viewer asked for may see it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from services.main import main
from shared.audit.record import build_record, dumps
from shared.audit.replay import timeline
from shared.core.cards import cards_str
from tests.audit.games import Game
from tests.pictures.test_route import _shown
from tests.pictures.test_turn_secrecy import pieces


def test_replay_draws_the_turn_for_the_seat_asked(
    tmp_path: Path, played: list[Game], capsys: pytest.CaptureFixture[str]
) -> None:
    game = played[4]
    line = timeline(game.events)
    start = line.turn_index()[6]
    record = tmp_path / "live.rrec"
    record.write_text(dumps(build_record(game.events[: start + 1], exported=0.0)))
    out = tmp_path / "turn.svg"
    assert main(["replay", str(record), "--turn", "5", "--seat", "0", "--svg", str(out)]) == 0
    assert str(out) in capsys.readouterr().err
    svg = out.read_text(encoding="utf-8")
    assert _shown(svg) == {seat: seat == 0 for seat in range(line.final.seats)}
    drawn = Counter(p["data-card"] for p in pieces(svg) if p["data-place"] == "hand")
    assert drawn == Counter(cards_str(line.states[start + 1].hands[0]))
    assert main(["replay", str(record), "--turn", "5", "--spectator", "--svg", str(out)]) == 0
    assert not any(_shown(out.read_text(encoding="utf-8")).values())
    missing = tmp_path / "no" / "such" / "dir.svg"
    assert main(["replay", str(record), "--turn", "5", "--svg", str(missing)]) == 2
    assert "dir.svg" in capsys.readouterr().err
