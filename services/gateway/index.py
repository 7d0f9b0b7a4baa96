"""The page at ``/``: where a newcomer lands after `make run` (the web client replaces it)."""

from __future__ import annotations

from aiohttp import web

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Robbers' Rummy referee</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 42rem; margin: 2rem auto">
<h1>Robbers' Rummy referee</h1>
<p>The service is running. Create a game with
<code>curl -X POST localhost:PORT/api/games -d '{"rules": "robbers", "seats": 2}'</code>,
take seats with <code>POST /api/games/{id}/seats</code>, start it with the host token and play
with <code>POST /api/games/{id}/commands</code>.</p>
<ul><li><a href="/api/games?status=waiting">games waiting</a>,
<a href="/api/games?status=playing">playing</a>,
<a href="/api/games?status=finished">finished</a></li>
<li><a href="/openapi.json">the API description</a></li>
<li><a href="/healthz">health</a>, <a href="/metrics">metrics</a></li></ul>
</body></html>"""


async def index(request: web.Request) -> web.Response:
    """The landing page."""
    port = str(request.url.port or 80)
    return web.Response(text=PAGE.replace("PORT", port), content_type="text/html")
