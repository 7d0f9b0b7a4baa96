"""The how-to-play pages in a real headless Chromium: from the lobby's link to the list, then to
each rule set's page by its link, each showing its sections and every variant; the table's page
has the same link. Screenshots of each page are kept with the run's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from shared.core.rulesets import OPTIONS, PRESETS
from tests.browser.conftest import Browser, Server
from tests.browser.test_web_client import click, css, one, snap, text, wait

SECTIONS = ("pieces", "melds", "opening", "jokers", "turn", "scoring", "variants")


def _at(path: str) -> Callable[[Any], bool]:
    """Whether the browser's page is ``path``."""
    return lambda driver: str(driver.current_url).endswith(path)


def test_each_how_to_play_page_opens_from_the_lobby(
    server: Server, browser: Browser, shots: Path
) -> None:
    reader = browser()
    reader.get(f"{server.url}/")
    wait(reader, lambda d: not css(d, "main .loading"), "the lobby")
    click(reader, "a.how-to-play-link")
    wait(reader, _at("/how-to-play"), "the how-to-play list")
    assert text(reader, "h1") == "How to play"
    snap(reader, shots, "how-to-play")
    for name in PRESETS:
        reader.get(f"{server.url}/how-to-play")
        click(reader, f'main a[href="/how-to-play/{name}"]')
        wait(reader, _at(f"/how-to-play/{name}"), name)
        for section in SECTIONS:
            assert css(reader, f"section#{section} h2"), (name, section)
        rows = css(reader, "table.variants tr[data-option]")
        assert {row.get_attribute("data-option") for row in rows} == set(OPTIONS), name
        snap(reader, shots, f"how-to-play-{name}")
    # The table is a screen of the same page: the link is there too.
    status, created, _ = server.call("POST", "/api/games", {"rules": "rummikub", "seats": 2})
    assert status == 201, created
    reader.get(f"{server.url}/#/game/{created['game_id']}/watch")
    wait(reader, lambda d: not css(d, "main .loading"), "the table")
    assert one(reader, "a.how-to-play-link").get_attribute("href").endswith("/how-to-play")
