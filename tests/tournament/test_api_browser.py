"""The tournament pages in headless Chromium against `rummy serve` (whose tournament service
seats and starts the tables): a director creates a tournament from the lobby and opens
registration; a guest is asked to log in; a player registers with the button; the page picks
up entrants as they come (it reads the tournament again every few seconds); the director starts
round 1 (closing registration: the service pairs it and starts its games); the seated player
opens its table's game with Play (its seat token fetched with its session) and sees its hand;
the director records a ruling, which shows with its reason; the lobby lists the tournament
under its status. Skipped without Chromium, like every browser test."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from tests.browser.conftest import Browser, Server, browser, server, shots
from tests.browser.test_web_client import (
    browser_errors,
    css,
    hand_cards,
    one,
    snap,
    text,
    wait,
)

__all__ = ["browser", "server", "shots"]  # the browser tests' fixtures, used here

PASSWORD = "a fine password"


def _register_in(driver: Any, server: Server, name: str) -> None:
    """Register an account on the players' page (the session is its HttpOnly cookie)."""
    driver.get(f"{server.url}/web/players.html#/account")
    form = one(driver, 'form[aria-label="Register"]')
    form.find_element("css selector", "input[name=name]").send_keys(name)
    form.find_element("css selector", "input[name=password]").send_keys(PASSWORD)
    form.find_element("css selector", "button[type=submit]").click()
    wait(driver, lambda d: text(d, "h1") == name, f"{name}'s account page")


def _entrant(server: Server, tournament_id: str, name: str) -> None:
    """An account registered over the API."""
    status, made, _ = server.call("POST", "/api/accounts", {"name": name, "password": PASSWORD})
    assert status == 201, made
    status, body, _ = server.call(
        "POST", f"/api/tournaments/{tournament_id}/entrants", {}, token=made["token"]
    )
    assert status == 201, body


def test_a_director_runs_a_tournament_from_its_pages(
    server: Server, browser: Browser, shots: Path
) -> None:
    tag = uuid.uuid4().hex[:6]
    director = browser()
    _register_in(director, server, f"Dana {tag}")
    director.get(f"{server.url}/")
    link = one(director, "footer a.tournaments-link")
    assert link.get_attribute("href").endswith("/web/tournaments.html")
    director.get(f"{server.url}/web/tournaments.html#/")
    form = one(director, 'form[aria-label="Create a tournament"]')
    form.find_element("css selector", "input[name=name]").send_keys(f"Club night {tag}")
    rounds = form.find_element("css selector", "input[name=rounds]")
    rounds.clear()
    rounds.send_keys("2")
    seats = form.find_element("css selector", "input[name=table_seats]")
    seats.clear()
    seats.send_keys("2")
    form.find_element("css selector", "select[name=fill]").send_keys("byes")
    form.find_element("css selector", "button[type=submit]").click()
    wait(director, lambda d: "#/t/t" in d.current_url, "the new tournament's page")
    tournament_id = director.current_url.rsplit("/", 1)[1]
    assert text(director, "h1") == f"Club night {tag}"
    one(director, '[data-director="open"]').click()
    wait(director, lambda d: "registering" in text(d, ".status"), "registration open")

    guest = browser()
    guest.get(f"{server.url}/web/tournaments.html#/t/{tournament_id}")
    invite = one(guest, ".registration a")
    assert invite.text == "Log in to register"
    assert invite.get_attribute("href").endswith("/web/players.html#/account")
    assert not css(guest, '[aria-label="Director"]')  # the controls are the director's alone

    player = browser()
    _register_in(player, server, f"Eve {tag}")
    player.get(f"{server.url}/web/tournaments.html#/t/{tournament_id}")
    one(player, '[data-register="register"]').click()
    wait(player, lambda d: css(d, '[data-register="withdraw"]'), "the withdraw button")
    assert f"Eve {tag}" in text(player, ".entrants")
    assert not css(player, '[aria-label="Director"]')

    for n in range(3):
        _entrant(server, tournament_id, f"Entrant {n} {tag}")
    wait(
        director,
        lambda d: len(css(d, ".entrants li")) == 4,
        "the entrants, read again by the page",
        timeout=30,
    )
    one(director, '[data-director="round"]').click()
    wait(
        director,
        lambda d: len(css(d, ".round .tables li.started")) == 2,
        "round 1's two tables, started by the service",
        timeout=30,
    )
    assert "running" in text(director, ".status")
    game_ids = [li.get_attribute("data-game") for li in css(director, ".round .tables li")]
    assert all(g and g.startswith("g") for g in game_ids), game_ids
    assert not css(director, "[data-play]")  # the director sits at no table
    watch = one(director, ".round .tables li a.watch").get_attribute("href")
    assert watch.endswith(f"/#/game/{game_ids[0]}/watch") or watch.endswith(
        f"/#/game/{game_ids[1]}/watch"
    )

    play = wait(player, lambda d: css(d, "[data-play]"), "Eve's Play button", timeout=30)[0]
    game_id = play.get_attribute("data-play")
    assert game_id in game_ids
    play.click()
    wait(player, lambda d: d.current_url.endswith(f"/#/game/{game_id}"), "Eve's game")
    wait(player, lambda d: len(hand_cards(d)) > 0, "Eve's hand", timeout=30)
    snap(player, shots, "62-tournament-table-played")

    ruling = one(director, 'form[aria-label="Record a ruling"]')
    ruling.find_element("css selector", "select[name=kind]").send_keys("a disputed turn's verdict")
    for name, value in (("round", "1"), ("table", "1"), ("turn", "2"), ("verdict", "legal")):
        ruling.find_element("css selector", f"input[name={name}]").send_keys(value)
    ruling.find_element("css selector", "textarea[name=reason]").send_keys("a disputed meld")
    ruling.find_element("css selector", "button[type=submit]").click()
    wait(director, lambda d: "a disputed meld" in text(d, ".rulings"), "the ruling and its reason")
    wait(director, lambda d: "a disputed meld" in text(d, ".standings"), "the ruling's note")
    headers = [th.text for th in css(director, ".standings-holder th")]
    assert headers[:2] == ["#", "Player"] and "Notes" in headers, headers
    snap(director, shots, "60-tournament-director")

    _, view, _ = server.call("GET", f"/api/tournaments/{tournament_id}")
    assert [r["reason"] for r in view["rulings"]] == ["a disputed meld"]
    assert sorted(t["game_id"] for t in view["played"][0]["tables"]) == sorted(game_ids)
    player.get(f"{server.url}/web/tournaments.html#/t/{tournament_id}")
    wait(player, lambda d: "Registration is closed" in text(d, ".registration"), "closed")

    guest.get(f"{server.url}/web/tournaments.html#/status/running")
    row = one(guest, f'tr[data-tournament="{tournament_id}"]')
    assert f"Club night {tag}" in row.text and f"Dana {tag}" in row.text
    snap(guest, shots, "61-tournament-lobby")
    guest.get(f"{server.url}/web/tournaments.html#/status/finished")
    wait(guest, lambda d: "None here yet" in text(d, "main"), "no finished tournament")
    guest.get(f"{server.url}/web/tournaments.html#/status/all")
    one(guest, f'tr[data-tournament="{tournament_id}"]')
    for driver in (director, guest, player):
        assert browser_errors(driver) == []
