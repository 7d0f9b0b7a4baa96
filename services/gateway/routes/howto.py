"""How to play: a page per rule set at ``/how-to-play/<rules>`` (and the three listed at
``/how-to-play``), in the project's own words, with the variants a host can pick.

The words are templates in ``web/how-to-play/`` (``*.html.in``: not served as they are); each
preset's own figures (its jokers, opening, failed-turn draw...) are filled in from the preset,
and the list of variants is made from the rule options themselves (``OPTIONS``: every option,
its help, the values allowed and this preset's default), so a new option or a changed default
shows on the page without anyone editing it. Pages are made on each request, as the client's
files are read on each request, and sent with an ETag and ``no-cache``.
"""

from __future__ import annotations

import hashlib
import html
import json
from pathlib import Path
from string import Template
from typing import Any

from aiohttp import web

from services.gateway.errors import ApiError
from services.gateway.routes.static import WEB_DIR
from shared.core.rulesets import ALIASES, OPTIONS, PRESETS, RuleSet

PAGES = WEB_DIR / "how-to-play"
TITLES = {
    "robbers": "Robbers' Rummy",
    "robbers-classic": "Robbers' Rummy, the classic game",
    "rummikub": "Rummikub",
}
HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'self'; style-src 'self'; frame-ancestors 'none'; "
    "base-uri 'none'",
}


def shown(value: Any) -> str:
    """An option's value as the lobby and the API spell it (``null``, ``true``, ``low``)."""
    return value if isinstance(value, str) else json.dumps(value)


def figures(rules: RuleSet) -> dict[str, str]:
    """The preset's own numbers, in words, for its page's template."""
    hand = (
        str(rules.hand_size)
        if rules.hand_size is not None
        else f"{rules.hand_size_for(2)} ({rules.hand_size_for(4)} when four or more play)"
    )
    every = "as many as there are players"
    rounds = str(rules.match_rounds) if rules.match_rounds is not None else every
    timer = str(rules.turn_seconds) if rules.turn_seconds is not None else "unlimited"
    return {
        "players": f"{rules.min_players} to {rules.max_players}",
        "jokers": str(rules.jokers),
        "hand_size": hand,
        "opening_points": str(rules.opening_points),
        "joker_penalty": str(rules.joker_penalty),
        "max_rejections": str(rules.max_rejections),
        "failed_turn_draw": str(rules.failed_turn_draw),
        "match_rounds": rounds,
        "tie_break_rounds": str(rules.tie_break_rounds),
        "turn_seconds": timer,
        "robbers_opening": str(PRESETS["robbers"].opening_points),
        "rummikub_opening": str(PRESETS["rummikub"].opening_points),
    }


def variants(rules: RuleSet) -> str:
    """The table of every option: what it does, this preset's value and what a host may pick."""
    rows = []
    for name, spec in OPTIONS.items():
        rows.append(
            f'      <tr data-option="{name}"><th scope="row"><code>{name}</code></th>'
            f"<td>{html.escape(spec.help)}</td>"
            f"<td><code>{html.escape(shown(getattr(rules, name)))}</code></td>"
            f"<td>{html.escape(spec.allowed())}</td></tr>"
        )
    body = "\n".join(rows)
    return f"""<section class="panel" id="variants">
  <h2>Variants</h2>
  <p>Whoever creates a game may change any of these (in the lobby, under the rule set's
  options); the third column is what {html.escape(TITLES[rules.name])} plays by default.</p>
  <div class="table-wrap">
    <table class="variants">
      <thead><tr><th scope="col">option</th><th scope="col">what it changes</th>
      <th scope="col">here</th><th scope="col">a host may pick</th></tr></thead>
      <tbody>
{body}
      </tbody>
    </table>
  </div>
</section>"""


def page(name: str | None, root: Path = PAGES) -> str:
    """The page of rule set ``name`` (an alias names its preset), or the list when None."""
    shell = Template((root / "page.html.in").read_text(encoding="utf-8"))
    if name is None:
        body = Template((root / "index.html.in").read_text(encoding="utf-8"))
        text = body.substitute(figures(PRESETS["robbers"]))
        return shell.substitute(title="How to play", body=text)
    rules = PRESETS[name]
    body = Template((root / f"{name}.html.in").read_text(encoding="utf-8"))
    text = body.substitute(figures(rules)) + "\n" + variants(rules)
    return shell.substitute(title=f"How to play {TITLES[name]}", body=text)


def _answer(request: web.Request, text: str) -> web.Response:
    body = text.encode()
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    headers = {"ETag": etag, **HEADERS}
    if etag in request.headers.get("If-None-Match", ""):
        return web.Response(status=304, headers=headers)
    return web.Response(body=body, content_type="text/html", charset="utf-8", headers=headers)


async def index(request: web.Request) -> web.Response:
    return _answer(request, page(None))


async def rule_set_page(request: web.Request) -> web.Response:
    asked = request.match_info["rules"]
    name = ALIASES.get(asked, asked)
    if name not in PRESETS:
        known = ", ".join([*PRESETS, *ALIASES])
        raise ApiError(404, "not_found", f"no how-to-play page for {asked!r}; there are: {known}")
    return _answer(request, page(name))


def add_routes(app: web.Application) -> None:
    """``/how-to-play`` and ``/how-to-play/{rules}``."""
    app.router.add_get("/how-to-play", index)
    app.router.add_get("/how-to-play/{rules}", rule_set_page)
