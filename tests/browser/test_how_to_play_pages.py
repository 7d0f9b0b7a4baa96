"""The how-to-play pages without a browser: one per rule set (and the list), served with their
type, ETag and policy; every rule option explained on every page with that preset's default and
the values allowed (the list is made from the options, so it cannot drift from them); the
preset's own figures in its text; the lobby's page links them; an unknown rule set is a JSON
404."""

from __future__ import annotations

import html
from collections.abc import AsyncIterator
from html.parser import HTMLParser

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from services.gateway.routes import howto, static
from services.gateway.routes.howto import TITLES, shown
from services.gateway.routes.static import WEB_DIR
from shared.core.rulesets import OPTIONS, PRESETS

SECTIONS = ("pieces", "melds", "opening", "jokers", "turn", "scoring", "variants")


class Page(HTMLParser):
    """The parts of a page the tests read: section ids, links, and the variants' rows."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.links: list[str] = []
        self.rows: dict[str, list[str]] = {}
        self._row: str | None = None
        self._cells: list[str] = []
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.append(str(found["id"]))
        if tag == "a" and found.get("href"):
            self.links.append(str(found["href"]))
        if tag == "tr" and found.get("data-option"):
            self._row, self._cells = str(found["data-option"]), []
        if tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self._cells.append("".join(self._cell).strip())
            self._cell = None
        if tag == "tr" and self._row is not None:
            self.rows[self._row] = self._cells
            self._row = None


@pytest.fixture
async def client() -> AsyncIterator[TestClient[web.Request, web.Application]]:
    app = web.Application()
    howto.add_routes(app)
    static.add_routes(app)
    async with TestClient(TestServer(app)) as test_client:
        yield test_client


async def _page(client: TestClient[web.Request, web.Application], path: str) -> tuple[str, Page]:
    reply = await client.get(path)
    assert reply.status == 200, path
    assert reply.headers["Content-Type"].startswith("text/html"), path
    assert "frame-ancestors 'none'" in reply.headers["Content-Security-Policy"]
    again = await client.get(path, headers={"If-None-Match": reply.headers["ETag"]})
    assert again.status == 304, path
    text = await reply.text()
    assert "$" not in text, path  # every figure of the template filled in
    return text, Page(text)


async def test_every_option_is_explained_on_every_page(
    client: TestClient[web.Request, web.Application],
) -> None:
    for name, rules in PRESETS.items():
        text, page = await _page(client, f"/how-to-play/{name}")
        assert f"<h1>{TITLES[name]}</h1>" in text.replace("&#x27;", "'"), name
        assert set(page.rows) == set(OPTIONS), name
        for option, spec in OPTIONS.items():
            label, what, here, allowed = page.rows[option]
            assert label == option
            assert what == spec.help and what, (name, option)
            assert here == shown(getattr(rules, option)), (name, option)
            assert allowed == spec.allowed(), (name, option)
        missing = [s for s in SECTIONS if s not in page.ids]
        assert not missing, (name, missing)
        assert {f"/how-to-play/{n}" for n in PRESETS} <= set(page.links), name


async def test_each_page_has_its_presets_own_figures(
    client: TestClient[web.Request, web.Application],
) -> None:
    robbers, _ = await _page(client, "/how-to-play/robbers")
    assert "40 points" in robbers and "4 jokers" in robbers and "2 to 5 players" in robbers
    assert "never Q K A" in robbers
    classic, _ = await _page(client, "/how-to-play/robbers-classic")
    assert "Q K A 2" in classic and "There is none" in classic
    rummikub, _ = await _page(client, "/how-to-play/rummikub")
    assert "30 points" in rummikub and "<strong>3 tiles</strong>" in rummikub
    assert "60 seconds" in rummikub and "tile" in rummikub
    alias, _ = await _page(client, "/how-to-play/vatikan")
    assert alias == robbers
    index, page = await _page(client, "/how-to-play")
    assert {f"/how-to-play/{n}" for n in PRESETS} <= set(page.links)
    assert html.escape("Robbers' Rummy") in index or "Robbers' Rummy" in index


async def test_an_unknown_rule_set_is_a_json_404(
    client: TestClient[web.Request, web.Application],
) -> None:
    reply = await client.get("/how-to-play/poker")
    assert reply.status == 404
    body = await reply.json()
    assert body["error"]["code"] == "not_found"
    assert "poker" in body["error"]["message"] and "rummikub" in body["error"]["message"]


def test_the_lobby_and_the_table_link_the_pages() -> None:
    """The lobby and the table are both screens of index.html: its footer holds the link."""
    page = Page((WEB_DIR / "index.html").read_text(encoding="utf-8"))
    assert "/how-to-play" in page.links


def test_the_templates_are_not_served_as_files() -> None:
    assert not [name for name in static.web_files() if name.startswith("how-to-play/")]
