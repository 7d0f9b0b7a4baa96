"""A turn's picture in a real headless Chromium: a game played a few turns over the API, its
first turn's picture opened by URL with a seat's token, drawn by the browser (its own hand face
up, the other's as backs), and kept as a screenshot with the run's."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.browser.conftest import Browser, Server
from tests.browser.test_web_client import css, snap, wait


def test_a_turn_picture_opens_in_the_browser(server: Server, browser: Browser, shots: Path) -> None:
    status, created, _ = server.call("POST", "/api/games", {"rules": "rummikub", "seats": 2})
    assert status == 201, created
    game_id = created["game_id"]
    tokens = []
    for name in ("ann", "bo"):
        status, sat, _ = server.call("POST", f"/api/games/{game_id}/seats", {"name": name})
        assert status == 201, sat
        tokens.append(sat["token"])
    status, view, _ = server.call("POST", f"/api/games/{game_id}/start", {}, created["host_token"])
    assert status == 200, view
    for _ in range(3):  # three turns of draws
        _, view, _ = server.call("GET", f"/api/games/{game_id}")
        seat = view["turn"]["seat"]
        body = {"id": uuid.uuid4().hex, "type": "draw"}
        status, answer, _ = server.call(
            "POST", f"/api/games/{game_id}/commands", body, tokens[seat]
        )
        assert status == 200, answer
    viewer = browser(1100, 900)
    viewer.get(f"{server.url}/api/games/{game_id}/turns/2.svg?token={tokens[0]}")
    wait(viewer, lambda d: css(d, "svg g.hand"), "the picture")
    hands = css(viewer, "svg g.hand")
    assert [h.get_attribute("data-shown") for h in hands] == ["yes", "no"]
    mine = css(viewer, 'svg g.piece[data-place="hand"]')
    assert len(mine) >= 14 and all(p.get_attribute("data-seat") == "0" for p in mine)
    assert css(viewer, "svg g.back") and "Rummikub" in viewer.title
    snap(viewer, shots, "turn-picture", full_page=False)
