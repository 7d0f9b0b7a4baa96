"""Players in headless Chromium against `rummy serve` (whose bots service plays the bot's seat):
register on the players' page, take a seat logged in, lose a rated game to a bot, and see the
rating on the player page and the bot on the bots' board."""

from __future__ import annotations

from pathlib import Path

from tests.browser.conftest import Browser, Server
from tests.browser.test_web_client import (
    browser_errors,
    button,
    css,
    one,
    press,
    snap,
    take_seat,
    text,
    wait,
)


def test_register_play_a_rated_game_against_a_bot_and_see_the_rating(
    server: Server, browser: Browser, shots: Path
) -> None:
    driver = browser()
    driver.get(f"{server.url}/web/players.html#/account")
    register = one(driver, 'form[aria-label="Register"]')
    register.find_element("css selector", "input[name=name]").send_keys("Quinn")
    register.find_element("css selector", "input[name=password]").send_keys("a fine password")
    register.find_element("css selector", "button[type=submit]").click()
    wait(driver, lambda d: text(d, "h1") == "Quinn", "the account page")
    cookie = driver.get_cookie("rummy_session")
    assert cookie and cookie["httpOnly"] and cookie["value"].startswith("rs_")
    assert driver.execute_script("return document.cookie").find("rummy_session") == -1
    _, me, _ = server.call("GET", "/api/me", token=cookie["value"])
    player_id = me["id"]
    driver.get(f"{server.url}/web/players.html#/player/{player_id}")
    wait(driver, lambda d: "No finished games yet" in text(d, "main"), "an unrated page")

    body = {"rules": "robbers", "seats": 2, "options": {"match": "single"}, "bots": ["greedy"]}
    status, created, _ = server.call("POST", "/api/games", body)
    assert status == 201, created
    game_id = created["game_id"]
    driver.get(f"{server.url}/#/game/{game_id}")
    take_seat(driver, "typed name")  # the account's name is what is shown
    wait(driver, lambda d: any("Quinn" in li.text for li in css(d, ".seat-list li")), "Quinn")
    status, _, _ = server.call("POST", f"/api/games/{game_id}/start", token=created["host_token"])
    assert status == 200
    press(driver, "resign")
    wait(driver, lambda d: "Click again" in button(d, "resign").text, "the confirmation")
    press(driver, "resign")
    wait(driver, lambda d: css(d, '[data-focus="rematch"]'), "the game's end")

    driver.get(f"{server.url}/web/players.html#/player/{player_id}")
    driver.refresh()
    wait(driver, lambda d: css(d, ".rating"), "the rating", timeout=30)
    figures = text(driver, "section[data-rules=robbers] .figures")
    assert "1\ngames" in figures and "0\nwins" in figures, figures
    rating = float(text(driver, "section[data-rules=robbers] .rating"))
    assert rating < 0  # a newcomer's 0, lowered by a loss
    assert css(driver, "svg.chart polyline")
    link = one(driver, "section[data-rules=robbers] li a")
    assert link.get_attribute("href").endswith(f"/#/game/{game_id}/replay/1")
    snap(driver, shots, "40-player-page-after-a-rated-game")

    driver.get(f"{server.url}/web/players.html#/board/robbers/bots")
    wait(driver, lambda d: "greedy" in text(d, ".board"), "the bots' board")
    assert browser_errors(driver) == []
