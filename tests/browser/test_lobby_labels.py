"""The lobby in words, in headless Chromium against `rummy serve`: the options' values read as
a player says them (not the server's `lowest_total`, `to_hand`, `place_draw_place`), the fixed
deal's seed offered because this server takes one, and a finished game listed with its
winner."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.browser.conftest import Browser, Server
from tests.browser.test_lifecycle import create, sit
from tests.browser.test_web_client import browser_errors, click, css, one, snap, wait

RAW = re.compile(r"^[a-z]+(_[a-z]+)+$")  # a server value such as lowest_total


def choice_texts(driver: Any) -> dict[str, list[str]]:
    script = (
        "return Object.fromEntries([...document.querySelectorAll('select[id^=opt-]')]"
        ".map((s) => [s.id, [...s.options].map((o) => o.textContent)]))"
    )
    return dict(driver.execute_script(script))


def test_the_lobby_reads_as_words_and_lists_the_winner(
    server: Server, browser: Browser, shots: Path
) -> None:
    _, rules, _ = server.call("GET", "/api/rules")
    assert rules["seeded_games"] is True  # the tests' server runs with --allow-seeded-games
    created = create(server, "robbers", 2, {"match": "single"})
    game_id = created["game_id"]
    seats = [sit(server, game_id, name) for name in ("Gil", "Hana")]
    _, view, _ = server.call("POST", f"/api/games/{game_id}/start", token=created["host_token"])
    quitter = view["turn"]["seat"]
    status, _, _ = server.call(
        "POST",
        f"/api/games/{game_id}/commands",
        {"id": "resign-1", "type": "resign"},
        token=seats[quitter]["token"],
    )
    assert status == 200
    winner = ("Gil", "Hana")[1 - quitter]

    driver = browser()
    driver.get(f"{server.url}/")
    one(driver, "#opt-match")
    texts = choice_texts(driver)
    assert texts["opt-match"] == [
        "rounds, lowest total wins",
        "first to go out a number of times",
        "rounds, most rounds won",
        "a single round",
    ]
    raw = [t for values in texts.values() for t in values if RAW.match(t)]
    assert raw == [], raw
    assert "lowest total left in hand" in texts["opt-stall_winner"]
    assert "a replaced joker goes to the hand" in texts["opt-joker_policy"]
    assert "place, draw, place again, then end the turn" in texts["opt-turn_shape"]
    assert css(driver, "#deal-seed")  # offered: this server takes a seed

    click(driver, "#tab-finished")
    row = f'[data-game="{game_id}"] .game-winner'
    found = wait(driver, lambda d: css(d, row)[0].text if css(d, row) else None, "the winner")
    assert found == f"Won by {winner}", found
    snap(driver, shots, "45-lobby-finished-with-winner")
    assert browser_errors(driver) == []
