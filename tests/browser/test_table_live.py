"""The table as the other seats' moves reach it, in headless Chromium against `rummy serve`: on
the normal path (no reconnect) the "What happened" log tells the opponent's play in a player's
words as it happens, the table marks the cards it added until the next play, and the live region
says it aloud."""

from __future__ import annotations

import functools
import re
import uuid
from pathlib import Path
from typing import Any

from tests.browser.conftest import Browser, Server
from tests.browser.test_lifecycle import create, open_with, sit
from tests.browser.test_web_client import (
    browser_errors,
    button,
    css,
    drag,
    one,
    press,
    snap,
    text,
    wait,
)

OPTIONS = {"opening_points": 0, "match": "single", "turn_seconds": 300}


def started_with_a_play(server: Server, rules: str) -> tuple[str, list[dict[str, Any]], int, Any]:
    """A started two-seat game whose starter has a play (the solver's hint): (game id, seats,
    the starter, the hint)."""
    for _ in range(8):
        created = create(server, rules, 2, OPTIONS)
        game_id = created["game_id"]
        seats = [sit(server, game_id, name) for name in ("Ann", "Bo")]
        status, view, _ = server.call(
            "POST", f"/api/games/{game_id}/start", token=created["host_token"]
        )
        assert status == 200, view
        starter = view["turn"]["seat"]
        status, hint, _ = server.call(
            "GET", f"/api/games/{game_id}/hint", token=seats[starter]["token"]
        )
        assert status == 200, hint
        if hint["found"] and hint["played"]:
            return game_id, seats, starter, hint
    raise AssertionError("no deal of 8 gave the starter a play")


def command(server: Server, game_id: str, token: str, body: dict[str, Any]) -> Any:
    status, answer, _ = server.call(
        "POST", f"/api/games/{game_id}/commands", {"id": str(uuid.uuid4()), **body}, token=token
    )
    assert status == 200, answer
    return answer


LOG = "const l = document.getElementById('log'); return l ? l.innerText : ''"
SAID = "return document.getElementById('announcer').textContent"


def log_text(driver: Any) -> str:
    return str(driver.execute_script(LOG))


def test_the_opponents_play_reaches_the_log_live_and_stays_marked(
    server: Server, browser: Browser, shots: Path
) -> None:
    game_id, seats, starter, hint = started_with_a_play(server, "robbers")
    other = 1 - starter
    driver = browser()
    open_with(driver, server, game_id, {"token": seats[other]["token"], "seat": other})
    wait(
        driver,
        lambda d: "Ann's turn" in text(d, "#turn-line") or "Bo's turn" in text(d, "#turn-line"),
        "the table",
    )
    wait(driver, lambda d: "The game started." in log_text(d), "the log of the start")
    name = ("Ann", "Bo")[starter]
    # a refused layout first: the others are told why without the cards (the reason names them)
    _, mine, _ = server.call("GET", f"/api/games/{game_id}", token=seats[starter]["token"])
    status, _, _ = server.call(
        "POST",
        f"/api/games/{game_id}/commands",
        {"id": str(uuid.uuid4()), "type": "play", "layout": [mine["hand"][:1]]},
        token=seats[starter]["token"],
    )
    assert status == 422
    refused = f"{name}'s layout was refused (a meld too small)."
    wait(driver, lambda d: refused in log_text(d), "the refusal in the log")
    command(server, game_id, seats[starter]["token"], {"type": "play", "layout": hint["layout"]})
    played = len(hint["played"])
    said = f"{name} played {played} card{'s' if played != 1 else ''}"
    wait(driver, lambda d: said in log_text(d), f"'{said}' in the log, without a reconnect")
    wait(driver, lambda d: len(css(d, ".melds .card.their-move")) == played, "the play marked")
    assert f"what {name} just played" in text(driver, ".their-move-note")
    labels = [c.get_attribute("aria-label") for c in css(driver, ".melds .card.their-move")]
    assert all(label.endswith(f"just played by {name}") for label in labels), labels
    assert said in str(driver.execute_script(SAID))
    snap(driver, shots, "40-opponents-play-marked")
    # the marks stay through this seat's own draw (not a play) ...
    wait(driver, lambda d: "Your turn" in text(d, "#turn-line"), "this seat's turn")
    press(driver, "draw")
    wait(driver, lambda d: "drew 1 card" in log_text(d), "the draw in the log")
    assert len(css(driver, ".melds .card.their-move")) == played
    # ... and end with the next play
    _, view, _ = server.call("GET", f"/api/games/{game_id}", token=seats[starter]["token"])
    assert view["turn"]["seat"] == starter
    command(server, game_id, seats[starter]["token"], {"type": "draw", "source": "stock"})
    wait(driver, lambda d: log_text(d).count("drew 1 card") >= 2, "the opponent's draw, live")
    assert len(css(driver, ".melds .card.their-move")) == played  # a draw is not a play
    assert browser_errors(driver) == []


def test_rummikub_speaks_of_tiles_and_warns_before_the_penalty_draw(
    server: Server, browser: Browser, shots: Path
) -> None:
    created = create(server, "rummikub", 2, {"match": "single", "turn_seconds": 300})
    game_id = created["game_id"]
    seats = [sit(server, game_id, name) for name in ("Cy", "Di")]
    status, view, _ = server.call(
        "POST", f"/api/games/{game_id}/start", token=created["host_token"]
    )
    assert status == 200, view
    me = view["turn"]["seat"]
    driver = browser()
    open_with(driver, server, game_id, {"token": seats[me]["token"], "seat": me})
    wait(driver, lambda d: "Your turn" in text(d, "#turn-line"), "the player's turn")
    assert "Drag tiles onto a meld" in text(driver, "#hint")
    assert button(driver, "draw").text == "Draw" and not css(driver, "#draw-cost")
    # one tile alone as a new meld: refused, and said in tiles and colours
    drag(driver, css(driver, ".hand .card")[0], one(driver, ".new-meld"))
    wait(driver, lambda d: css(d, ".melds .card.moved"), "the tile on the table")
    press(driver, "play")
    refusal = wait(
        driver,
        lambda d: text(d, ".message.error") if css(d, ".message.error") else None,
        "the refusal",
    )
    assert "has 1 tile;" in refusal and "card" not in refusal, refusal
    assert not re.search(r"\[(JK|(10|[2-9AJQK])[SHDC])", refusal), refusal  # no card codes
    assert re.search(r"\[(black|red|orange|blue) \d+\]|\[joker\]", refusal), refusal
    # before the click, the warning: the draw now costs the failed turn's 3 tiles
    warning = text(driver, "#draw-cost")
    assert "drawing now costs 3 tiles" in warning, warning
    assert button(driver, "draw").text == "Draw 3 (penalty)"
    snap(driver, shots, "41-rummikub-refusal-and-penalty-warning")
    press(driver, "undo-message")
    hand = len(css(driver, ".hand .card"))
    press(driver, "draw")
    wait(driver, lambda d: "drew 3 penalty tiles for a refused layout" in log_text(d), "the log")
    assert "You drew 3 tiles for the refused layout." in text(driver, ".message")
    wait(driver, lambda d: len(css(d, ".hand .card")) == hand + 3, "three more tiles in hand")
    assert not css(driver, "#draw-cost")
    snap(driver, shots, "42-rummikub-penalty-drawn")
    # the message is old news once this player's turn comes round again
    command(server, game_id, seats[1 - me]["token"], {"type": "draw", "source": "stock"})
    wait(driver, lambda d: "Your turn" in text(d, "#turn-line"), "the turn back")
    wait(driver, lambda d: not css(d, ".message"), "the old message gone")
    assert browser_errors(driver) == []


def test_a_hint_is_previewed_dismissed_and_applied_as_the_draft(
    server: Server, browser: Browser, shots: Path
) -> None:
    game_id, seats, starter, hint = started_with_a_play(server, "robbers")
    driver = browser()
    open_with(driver, server, game_id, {"token": seats[starter]["token"], "seat": starter})
    wait(driver, lambda d: "Your turn" in text(d, "#turn-line"), "the player's turn")
    press(driver, "hint")
    played = len(hint["played"])
    title = wait(
        driver,
        lambda d: text(d, "#hint-title") if css(d, "#hint-title") else None,
        "the preview",
    )
    assert f"play {played} card" in title, title
    assert len(css(driver, ".hint-preview .card.moved")) == played
    assert not css(driver, ".melds .card.moved")  # only a preview: the table is untouched
    snap(driver, shots, "43-hint-previewed")
    press(driver, "hint-dismiss")
    wait(driver, lambda d: not css(d, ".hint-preview"), "the preview dismissed")
    held = len(css(driver, ".hand .card"))
    press(driver, "hint")
    press(driver, "hint-apply")
    wait(driver, lambda d: len(css(d, ".melds .card.moved")) == played, "the hint as the draft")
    assert not css(driver, ".hint-preview")
    assert len(css(driver, ".hand .card")) == held - played
    snap(driver, shots, "44-hint-applied")
    press(driver, "play")
    wait(driver, lambda d: "accepted your layout" in text(d, ".message"), "the play accepted")
    _, view, _ = server.call("GET", f"/api/games/{game_id}")
    assert sorted(map(sorted, view["table"])) == sorted(map(sorted, hint["layout"]))
    assert browser_errors(driver) == []


def test_no_hint_button_where_the_game_has_hints_off(server: Server, browser: Browser) -> None:
    created = create(server, "robbers", 2, {**OPTIONS, "hints": False})
    game_id = created["game_id"]
    seats = [sit(server, game_id, name) for name in ("Ed", "Flo")]
    _, view, _ = server.call("POST", f"/api/games/{game_id}/start", token=created["host_token"])
    me = view["turn"]["seat"]
    driver = browser()
    open_with(driver, server, game_id, {"token": seats[me]["token"], "seat": me})
    wait(driver, lambda d: "Your turn" in text(d, "#turn-line"), "the player's turn")
    assert css(driver, '[data-focus="draw"]') and not css(driver, '[data-focus="hint"]')


MARKS = """
const done = arguments[arguments.length - 1];
import('/web/js/moved.js').then((m) => done(
  m.playMarks(arguments[0], arguments[1], arguments[2]).map((s) => [...s].sort())
), (err) => done(String(err)));
"""


def test_a_rearranging_play_marks_what_it_added_and_moved(server: Server, browser: Browser) -> None:
    driver = browser()
    driver.get(f"{server.url}/")
    before = [["5H", "6H", "7H", "8H"], ["QS", "QD", "QC"]]
    after = [["QS", "QD", "QC"], ["5H", "6H", "7H"], ["8H", "8S", "8D"]]
    marks = driver.execute_async_script(MARKS, before, after, ["8S", "8D"])
    # the run that lost its end and the untouched set stay unmarked; the 8 moved, the two came
    assert marks == [[], [], [0, 1, 2]], marks
    grown = driver.execute_async_script(
        MARKS, before, [["5H", "6H", "7H", "8H", "9H"], *before[1:]], ["9H"]
    )
    assert grown == [[4], []], grown
    # a play older than the page (the table before it unknown): the hand's cards alone
    unknown = driver.execute_async_script(MARKS, None, after, ["8S", "8D"])
    assert unknown == [[], [], [1, 2]], unknown


def test_a_bots_move_is_named_as_the_bots(server: Server, browser: Browser) -> None:
    created = create(server, "robbers", 2, OPTIONS)
    game_id = created["game_id"]
    status, _, _ = server.call(
        "POST", f"/api/games/{game_id}/seats", {"bot": "greedy"}, token=created["host_token"]
    )
    assert status == 201
    human = sit(server, game_id, "Ivo")
    _, view, _ = server.call("POST", f"/api/games/{game_id}/start", token=created["host_token"])
    bot = 1 - human["seat"]
    driver = browser()
    open_with(driver, server, game_id, {"token": human["token"], "seat": human["seat"]})
    if view["turn"]["seat"] == human["seat"]:
        wait(driver, lambda d: "Your turn" in text(d, "#turn-line"), "the player's turn")
        press(driver, "draw")
    name = view["seats"][bot]["name"]
    told = re.compile(rf"(the {name} bot|{name} \(bot greedy\)) (played|drew)")
    wait(driver, lambda d: told.search(log_text(d)), "the bot's move in the log", timeout=60)
    assert browser_errors(driver) == []


FAKE_HINT = """
const [status, code, retry] = arguments;
const real = window.__realFetch || window.fetch;
window.__realFetch = real;
window.fetch = (url, options) => String(url).includes('/hint')
  ? Promise.resolve(new Response(
      JSON.stringify({error: {code, message: code}}),
      {status, headers: {'Content-Type': 'application/json', 'Retry-After': String(retry)}}))
  : real(url, options);
"""


def said_now(driver: Any, said: str) -> bool:
    return bool(css(driver, ".message.warn")) and said in text(driver, ".message.warn")


def test_the_hints_refusals_are_said_plainly(server: Server, browser: Browser) -> None:
    """The server's refusals of a hint (its shape as the gateway sends it, answered in the page
    in place of the server: the budget and the limit are not reached on demand here)."""
    game_id, seats, starter, _ = started_with_a_play(server, "robbers")
    driver = browser()
    open_with(driver, server, game_id, {"token": seats[starter]["token"], "seat": starter})
    wait(driver, lambda d: "Your turn" in text(d, "#turn-line"), "the player's turn")
    for status, code, said in (
        (429, "rate_limited", "You have asked for hints too often. Try again in 7 s."),
        (503, "solver_busy", "The solver is busy with other players' questions. Try again in 7 s."),
        (503, "hint_timeout", "This position is too costly to hint"),
    ):
        driver.execute_script(FAKE_HINT, status, code, 7)
        press(driver, "hint")
        wait(driver, functools.partial(said_now, said=said), f"the {code} refusal")
        assert not css(driver, ".hint-preview")
        wait(driver, lambda d: not button(d, "hint").get_attribute("disabled"), "Hint again")


def test_a_seat_taken_is_old_news_once_the_game_starts(server: Server, browser: Browser) -> None:
    created = create(server, "robbers", 2, OPTIONS)
    game_id = created["game_id"]
    sit(server, game_id, "Jan")
    driver = browser()
    driver.get(f"{server.url}/#/game/{game_id}")
    one(driver, "#join-name").send_keys("Kim")
    press(driver, "join")
    wait(driver, lambda d: "You took seat 2." in text(d, ".message"), "the seat taken")
    status, _, _ = server.call("POST", f"/api/games/{game_id}/start", token=created["host_token"])
    assert status == 200
    wait(driver, lambda d: css(d, ".felt"), "the table")
    wait(driver, lambda d: not css(d, ".message"), "the waiting room's message gone")
    assert "The game started." in log_text(driver)
    assert browser_errors(driver) == []
