"""The web client's ways out of a game and into the next, in headless Chromium against `rummy
serve`: the host seats a bot and cancels a waiting game; a player leaves a waiting game; a player
resigns (the other wins), offers a rematch and the other joins it with one click; an absent
player's seat is shown as handed to a bot, and the player takes it back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.browser.conftest import Browser, Server
from tests.browser.test_web_client import browser_errors, button, css, one, press, snap, text, wait


def open_with(driver: Any, server: Server, game_id: str, keys: dict[str, Any]) -> None:
    """Open the game with ``keys`` where the page keeps them (test set-up only)."""
    driver.get(f"{server.url}/#/")
    stored = json.dumps({game_id: keys})
    driver.execute_script("localStorage.setItem('rummy.games.v1', arguments[0])", stored)
    driver.get(f"{server.url}/#/game/{game_id}")


def create(server: Server, rules: str, seats: int, options: dict[str, Any] | None = None) -> Any:
    body = {"rules": rules, "seats": seats, "options": options or {}}
    status, created, _ = server.call("POST", "/api/games", body)
    assert status == 201, created
    return created


def sit(server: Server, game_id: str, name: str) -> dict[str, Any]:
    status, seat, _ = server.call("POST", f"/api/games/{game_id}/seats", {"name": name})
    assert status == 201, seat
    return dict(seat)


def seat_texts(driver: Any) -> list[str]:
    """The waiting room's seats (read in one go: the list is drawn again on every change)."""
    script = "return [...document.querySelectorAll('.seat-list li')].map((li) => li.innerText)"
    return [str(t) for t in driver.execute_script(script)]


def test_the_host_seats_a_bot_and_cancels_the_game(
    server: Server, browser: Browser, shots: Path
) -> None:
    driver = browser()
    created = create(server, "robbers", 3)
    game_id = created["game_id"]
    open_with(driver, server, game_id, {"host": created["host_token"]})
    one(driver, "#bot-name")
    from selenium.webdriver.support.ui import Select

    Select(one(driver, "#bot-name")).select_by_value("solver")
    press(driver, "seat-bot")
    wait(driver, lambda d: any("bot: solver" in t for t in seat_texts(d)), "the bot's seat")
    _, view, _ = server.call("GET", f"/api/games/{game_id}")
    assert view["seats"][0]["bot"] == "solver"
    snap(driver, shots, "30-waiting-room-with-a-bot")
    press(driver, "cancel-game")
    wait(driver, lambda d: "cancelled" in text(d, "#cancelled-title"), "the cancelled game")
    _, view, _ = server.call("GET", f"/api/games/{game_id}")
    assert view["status"] == "cancelled"
    _, lobby, _ = server.call("GET", "/api/games?status=waiting")
    assert game_id not in {g["game_id"] for g in lobby["games"]}
    assert browser_errors(driver) == []


def test_a_player_leaves_a_waiting_game(server: Server, browser: Browser) -> None:
    driver = browser()
    created = create(server, "rummikub", 2)
    game_id = created["game_id"]
    seat = sit(server, game_id, "Gus")
    open_with(driver, server, game_id, {"token": seat["token"], "seat": seat["seat"]})
    press(driver, "leave")
    wait(driver, lambda d: css(d, "#join-name"), "the form to take a seat again")
    # (the form comes with the answer, the seat list with the view the change brings after it)
    wait(driver, lambda d: any("Free seat" in t for t in seat_texts(d)), "the seat shown free")
    _, view, _ = server.call("GET", f"/api/games/{game_id}")
    assert view["seats"][0]["name"] is None
    status, _, _ = server.call("GET", f"/api/games/{game_id}", token=seat["token"])
    assert status == 401  # the seat's token no longer works
    assert browser_errors(driver) == []


def test_a_player_resigns_and_a_rematch_is_joined_in_one_click(
    server: Server, browser: Browser, shots: Path
) -> None:
    created = create(server, "robbers", 2, {"match": "single"})
    game_id = created["game_id"]
    seats = [sit(server, game_id, name) for name in ("Hal", "Ivy")]
    status, _, _ = server.call("POST", f"/api/games/{game_id}/start", token=created["host_token"])
    assert status == 200
    hal, ivy = browser(), browser()
    open_with(hal, server, game_id, {"token": seats[0]["token"], "seat": 0})
    open_with(ivy, server, game_id, {"token": seats[1]["token"], "seat": 1})
    press(hal, "resign")
    wait(hal, lambda d: "Click again" in button(d, "resign").text, "the confirmation")
    press(hal, "resign")
    wait(hal, lambda d: css(d, '[data-focus="rematch"]'), "the game's end, with a rematch")
    _, view, _ = server.call("GET", f"/api/games/{game_id}")
    assert view["status"] == "finished" and view["winner"] == [1]
    assert view["seats"][0]["resigned"] is True
    wait(ivy, lambda d: "resigned" in text(d, ".players"), "the resigned seat's badge")
    snap(hal, shots, "31-resigned-game-over")
    press(hal, "rematch")
    wait(hal, lambda d: "#/game/" in d.current_url and game_id not in d.current_url, "the rematch")
    rematch = hal.current_url.split("#/game/")[1].split("/")[0]
    wait(hal, lambda d: css(d, ".seat-list"), "the rematch's waiting room")
    wait(ivy, lambda d: css(d, '[data-focus="join-rematch"]'), "Join the rematch")
    press(ivy, "join-rematch")
    wait(ivy, lambda d: rematch in d.current_url, "the rematch's page")
    _, view, _ = server.call("GET", f"/api/games/{rematch}")
    wait(hal, lambda d: css(d, ".players"), "the rematch under way")
    _, view, _ = server.call("GET", f"/api/games/{rematch}")
    assert view["status"] == "playing" and view["rematch_of"] == game_id
    assert [s["name"] for s in view["seats"]] == ["Ivy", "Hal"]
    assert browser_errors(hal) == [] and browser_errors(ivy) == []


def test_an_absent_players_seat_shows_its_bot_until_the_player_is_back(
    server: Server, browser: Browser, shots: Path
) -> None:
    options = {"absent_seconds": 10, "absent_turns": 1, "absent": "bot", "match": "single"}
    created = create(server, "robbers", 2, options)
    game_id = created["game_id"]
    seats = [sit(server, game_id, name) for name in ("Jo", "Kit")]
    status, view, _ = server.call(
        "POST", f"/api/games/{game_id}/start", token=created["host_token"]
    )
    assert status == 200
    absent = view["turn"]["seat"]
    driver = browser()
    open_with(driver, server, game_id, {"token": seats[absent]["token"], "seat": absent})
    wait(
        driver,
        lambda d: "away (greedy plays)" in text(d, ".players"),
        "the absent seat handed to a bot",
        timeout=40,
    )
    snap(driver, shots, "32-away-seat-played-by-a-bot")
    press(driver, "return")
    wait(driver, lambda d: "away" not in text(d, ".players"), "the seat back")
    _, view, _ = server.call("GET", f"/api/games/{game_id}")
    assert view["seats"][absent]["away"] is None and view["seats"][absent]["bot"] is None
    assert browser_errors(driver) == []
