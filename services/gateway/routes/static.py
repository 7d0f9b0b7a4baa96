"""The web client: its page at ``/``, its files under ``/web/``, and ``GET /api/rules`` (the rule
sets and every option with its help text, allowed values and each preset's default, which the
lobby shows next to each option); and the API's description at ``/openapi.json``.

The client is plain ES modules and CSS in ``services/gateway/web/`` (no build step). Only the
files found there when the app is made are served, by name; anything else is a 404. Files are
read on each request (an edit shows on reload) and sent with an ETag and ``no-cache``, so a
browser revalidates rather than keeping an old module.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path
from typing import Any

from aiohttp import web

from services.gateway.openapi import openapi_document
from services.gateway.state import GATEWAY
from shared.core.rulesets import ALIASES, MAX_SEATS, MIN_SEATS, OPTIONS, PRESETS

WEB_DIR = Path(__file__).resolve().parent.parent / "web"
TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
    ".json": "application/json",
    ".webmanifest": "application/manifest+json",
    ".png": "image/png",
}
HOST = re.compile(r"[A-Za-z0-9.\-]+(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?")
FALLBACK = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Robbers' Rummy referee</title></head><body>
<p>The web client's files are missing from this installation. The API is at
<a href="/api/games?status=waiting">/api/games</a>, described at
<a href="/openapi.json">/openapi.json</a>.</p></body></html>"""


def web_files(root: Path = WEB_DIR) -> dict[str, Path]:
    """The client's files by their path under ``/web/`` (only known file types, no dotfiles)."""
    if not root.is_dir():
        return {}
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if not path.is_file() or path.suffix not in TYPES:
            continue
        if any(part.startswith(".") for part in relative.parts):
            continue
        found[relative.as_posix()] = path
    return found


def _file_response(request: web.Request, path: Path) -> web.Response:
    body = path.read_bytes()
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    headers = {
        "ETag": etag,
        "Cache-Control": "no-cache",
        "X-Content-Type-Options": "nosniff",
    }
    if path.suffix == ".html":
        # The page talks only to its own server (its WebSocket named too: older browsers do not
        # count ws: as 'self'); nothing may frame it.
        host = request.host if HOST.fullmatch(request.host) else ""
        sockets = f" ws://{host} wss://{host}" if host else ""
        headers["Content-Security-Policy"] = (
            "default-src 'self'; img-src 'self' data:; style-src 'self'; "
            f"connect-src 'self'{sockets}; frame-ancestors 'none'; base-uri 'none'"
        )
    if etag in request.headers.get("If-None-Match", ""):
        return web.Response(status=304, headers=headers)
    content_type = TYPES[path.suffix]
    charset = None if content_type.startswith("image/png") else "utf-8"
    return web.Response(body=body, content_type=content_type, charset=charset, headers=headers)


def rules_document() -> dict[str, Any]:
    """The rule sets, their aliases, the seat limits and every option (for the lobby)."""
    presets = {
        name: {k: v for k, v in dataclasses.asdict(rules).items() if k != "name"}
        for name, rules in PRESETS.items()
    }
    options = {
        name: {
            "kind": spec.kind,
            "help": spec.help,
            "allowed": spec.allowed(),
            **({"low": spec.low, "high": spec.high} if spec.kind in ("int", "int?") else {}),
            **({"choices": list(spec.choices)} if spec.kind == "choice" else {}),
            "defaults": {preset: values[name] for preset, values in presets.items()},
        }
        for name, spec in OPTIONS.items()
    }
    return {
        "presets": presets,
        "aliases": dict(ALIASES),
        "seats": {"min": MIN_SEATS, "max": MAX_SEATS},
        "options": options,
    }


async def openapi(request: web.Request) -> web.Response:
    return web.json_response(openapi_document())


def add_routes(app: web.Application, root: Path = WEB_DIR) -> None:
    """Serve the client at ``/`` and ``/web/{path}``, and the rules at ``/api/rules``."""
    files = web_files(root)
    rules = rules_document()

    async def page(request: web.Request) -> web.Response:
        index = files.get("index.html")
        if index is None or not index.is_file():
            return web.Response(text=FALLBACK, content_type="text/html")
        return _file_response(request, index)

    async def asset(request: web.Request) -> web.Response:
        path = files.get(request.match_info["path"])
        if path is None or not path.is_file():
            raise web.HTTPNotFound()
        return _file_response(request, path)

    async def rules_handler(request: web.Request) -> web.Response:
        # Whether this server takes a fixed deal seed: the lobby offers the field only then.
        gw = request.app.get(GATEWAY)
        seeded = gw is not None and gw.settings.allow_seeded_games
        return web.json_response({**rules, "seeded_games": seeded})

    app.router.add_get("/", page)
    app.router.add_get("/web/{path:.+}", asset)
    app.router.add_get("/api/rules", rules_handler)
