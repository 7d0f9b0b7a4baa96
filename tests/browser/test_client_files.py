"""The web client's files as the browser will ask for them, without a browser: what index.html
links and what each module imports exists and is served (its type, its ETag, a revalidation),
nothing is left unreached, no module grows past a size a reader can hold, and game.js stays a
screen the router opens, not a library the other screens lean on.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path, PurePosixPath

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from services.gateway.routes.static import TYPES, WEB_DIR, add_routes, web_files

MAX_LINES = 400  # a JS module or a stylesheet; game.js was 1,230 lines of one closure
ROUTER = "js/main.js"  # the only module that may import game.js (it opens the game screen)

LINKED = re.compile(r"""<(?:link|script)\b[^>]*?\b(?:href|src)="/web/([^"]+)\"""")
# Static imports and re-exports (`import x from "./a.js"`, `import "./a.js"`, `export {x} from
# "./a.js"`, across lines) and dynamic `import("./a.js")`.
IMPORTED = re.compile(
    r"""\bimport\s+(?:[\w$*{},\s]+?\s*from\s*)?["']([^"']+)["']"""
    r"""|\bexport\s+(?:\*|\{[\w$,\s]*\})(?:\s+as\s+[\w$]+)?\s*from\s*["']([^"']+)["']"""
    r"""|\bimport\(\s*["']([^"']+)["']\s*\)"""
)
CSS_IMPORTED = re.compile(r"""@import\s+(?:url\()?\s*["']?([^"')\s;]+)""")


def _strip_js_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"(?m)^\s*//.*$", "", text)


def references(name: str, text: str) -> list[str]:
    """The files (paths under /web/) that the file ``name`` refers to."""
    if name.endswith(".html"):
        return LINKED.findall(text)
    here = PurePosixPath(name).parent
    if name.endswith(".css"):
        found = CSS_IMPORTED.findall(text)
    else:
        found = [a or b or c for a, b, c in IMPORTED.findall(_strip_js_comments(text))]
    out = []
    for target in found:
        if target.startswith("/web/"):
            out.append(target.removeprefix("/web/"))
            continue
        if name.endswith(".js"):  # a bare name would need an import map: none is served
            assert target.startswith("."), f"{name} imports {target!r}: not a file of the client"
        parts: list[str] = []
        for part in (here / target).parts:
            if part == "..":
                parts.pop()
            elif part != ".":
                parts.append(part)
        out.append("/".join(parts))
    return out


def reachable() -> dict[str, list[str]]:
    """Every file reached from index.html, with the files it refers to."""
    files = web_files()
    graph: dict[str, list[str]] = {}
    todo = ["index.html"]
    while todo:
        name = todo.pop()
        if name in graph:
            continue
        path = files.get(name)
        graph[name] = references(name, path.read_text()) if path else []
        todo.extend(graph[name])
    return graph


def test_the_reference_parser_reads_every_form_of_import() -> None:
    js = """// import "./commented.js";
import { a,
  b } from "./one.js";
import * as Two from './two.js';
import "./three.js";
export { c } from "../four.js";
const later = () => import("./five.js");
const text = "import nothing";
export function f(options) { return "null"; }
"""
    assert references("js/x.js", js) == [
        "js/one.js",
        "js/two.js",
        "js/three.js",
        "four.js",
        "js/five.js",
    ]
    html = '<link rel="stylesheet" href="/web/css/a.css">\n<script src="/web/js/m.js">'
    assert references("index.html", html) == ["css/a.css", "js/m.js"]
    assert references("css/a.css", '@import url("./b.css");\n@import "c.css";') == [
        "css/b.css",
        "css/c.css",
    ]


def test_every_linked_or_imported_file_exists() -> None:
    files = web_files()
    assert "index.html" in files
    graph = reachable()
    missing = sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        for target in targets
        if target not in files
    )
    assert not missing, f"referred to but not in {WEB_DIR}: {sorted(missing)}"
    assert any(name.endswith(".css") for name in graph), "index.html links no stylesheet"
    assert ROUTER in graph and "js/game.js" in graph


def test_no_file_of_the_client_is_left_unreached() -> None:
    graph = reachable()
    orphans = [name for name in web_files() if name.endswith((".js", ".css")) and name not in graph]
    assert not orphans, f"served but neither linked nor imported: {orphans}"


def test_only_the_router_imports_the_game_screen() -> None:
    leaning = [
        name for name, targets in reachable().items() if "js/game.js" in targets and name != ROUTER
    ]
    assert not leaning, f"{leaning} import game.js: take shared helpers from their own modules"


def test_no_module_or_stylesheet_is_too_long() -> None:
    long = {
        name: len(path.read_text().splitlines())
        for name, path in web_files().items()
        if name.endswith((".js", ".css"))
    }
    over = {name: lines for name, lines in long.items() if lines > MAX_LINES}
    assert not over, f"over {MAX_LINES} lines: {over} (split by concern)"


def test_every_module_says_what_it_is_for() -> None:
    for name, path in web_files().items():
        if name.endswith((".js", ".css")):
            head = path.read_text().lstrip()
            assert head.startswith(("//", "/*")), f"{name} has no header comment"


@pytest.fixture
async def client() -> AsyncIterator[TestClient[web.Request, web.Application]]:
    app = web.Application()
    add_routes(app)
    async with TestClient(TestServer(app)) as test_client:
        yield test_client


async def test_every_reached_file_is_served_with_its_type_and_etag(
    client: TestClient[web.Request, web.Application],
) -> None:
    for name in sorted(reachable()):
        url = "/" if name == "index.html" else f"/web/{name}"
        reply = await client.get(url)
        assert reply.status == 200, name
        expected = TYPES[Path(name).suffix]
        assert reply.headers["Content-Type"].startswith(expected), (name, reply.headers)
        assert reply.headers["Cache-Control"] == "no-cache", name
        assert reply.headers["X-Content-Type-Options"] == "nosniff", name
        etag = reply.headers["ETag"]
        again = await client.get(url, headers={"If-None-Match": etag})
        assert again.status == 304, name
