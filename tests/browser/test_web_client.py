"""The web client in a real headless Chromium, against `rummy serve` in a subprocess.

Two players in two browser windows (each its own profile): one creates a game in the lobby with
its options, both take seats by the game's link, the host starts it; they play four turns by
real drag and drop (pointer input from chromedriver's action chains: no JavaScript moves a card),
one illegal layout is refused with the referee's message and undone, a keyboard pick-up and drop
is tried, the table is seen on a phone-sized screen, the rest of the game is finished over the
API (draws, then passes on the empty stock), and the replay is stepped through forward and back.
Screenshots of every screen go to the folder printed at the start and end of the run.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import Browser, Proxy, Server
from tests.browser.deal import OPTIONS, SERVER_SEED, Plan, find_plan
from tests.servers import wait_until

WAIT = 15.0


# --- helpers ----------------------------------------------------------------------------------


def wait(driver: Any, condition: Callable[[Any], Any], what: str, timeout: float = WAIT) -> Any:
    """Poll ``condition(driver)`` until it is truthy; fail naming ``what`` (and the page)."""
    last: list[Exception | None] = [None]

    def check() -> Any:
        try:
            return condition(driver)
        except Exception as err:  # stale elements while the page re-renders
            last[0] = err
            return None

    def why() -> str:
        shown = hasattr(driver, "title")
        page = driver.find_element("tag name", "body").text[-1500:] if shown else ""
        return f"timed out waiting for {what} (last error: {last[0]!r}); page:\n{page}"

    return wait_until(check, timeout, every=0.05, message=why)


def css(driver: Any, selector: str) -> list[Any]:
    return list(driver.find_elements("css selector", selector))


def one(driver: Any, selector: str) -> Any:
    return wait(driver, lambda d: css(d, selector)[0] if css(d, selector) else None, selector)


def click(driver: Any, selector: str) -> None:
    """Click the first element at ``selector`` once it is there: found and clicked in one try of
    ``wait``, so a re-render between the two (a stale element) is tried again."""

    def clicked(d: Any) -> bool | None:
        found = css(d, selector)
        if not found:
            return None
        found[0].click()
        return True

    wait(driver, clicked, f"{selector} to click")


def press(driver: Any, focus: str) -> None:
    """Click the button of ``data-focus`` ``focus``, as ``click`` does."""
    click(driver, f'[data-focus="{focus}"]')


def text(driver: Any, selector: str) -> str:
    """The text of the first element at ``selector``, read once it is there: found and read in
    one try of ``wait``, so a re-render between the two (a stale element) is tried again."""
    found = wait(
        driver, lambda d: (css(d, selector)[0].text,) if css(d, selector) else None, selector
    )
    return str(found[0])


def attr(driver: Any, selector: str, name: str) -> str:
    """An attribute of the first element at ``selector``, read as ``text`` reads."""
    found = wait(
        driver,
        lambda d: (css(d, selector)[0].get_attribute(name),) if css(d, selector) else None,
        selector,
    )
    return str(found[0] or "")


def snap(driver: Any, folder: Path, name: str, full_page: bool = True) -> Path:
    """A screenshot of the whole page (the window grown to the page's height for it)."""
    path = folder / f"{name}.png"
    size = driver.get_window_size()
    if full_page:
        driver.execute_script("window.scrollTo(0, 0)")
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(size["width"], max(size["height"], min(int(height) + 20, 6000)))
        time.sleep(0.25)
    driver.save_screenshot(str(path))
    if full_page:
        driver.set_window_size(size["width"], size["height"])
    return path


def drag(driver: Any, source: Any, target: Any) -> None:
    """Press on ``source``, move (past the drag threshold) onto ``target`` and release: the
    browser sees real pointerdown, pointermove and pointerup events."""
    from selenium.webdriver.common.action_chains import ActionChains

    (
        ActionChains(driver, duration=60)
        .move_to_element(source)
        .click_and_hold()
        .move_by_offset(12, 12)
        .move_to_element(target)
        .pause(0.05)
        .release()
        .perform()
    )


def touch_drag(driver: Any, source: Any, target: Any) -> None:
    """The same with a finger: touch input, which the page gets as pointer events too."""
    from selenium.webdriver.common.actions import interaction
    from selenium.webdriver.common.actions.action_builder import ActionBuilder
    from selenium.webdriver.common.actions.pointer_input import PointerInput

    finger = PointerInput(interaction.POINTER_TOUCH, "finger")
    actions = ActionBuilder(driver, mouse=finger, duration=60)
    (
        actions.pointer_action.move_to(source)
        .pointer_down()
        .move_by(12, 12)
        .move_to(target)
        .pause(0.05)
        .pointer_up()
    )
    actions.perform()


def cards_at(driver: Any, selector: str, attribute: str = "data-card") -> list[str]:
    """The ``attribute`` of every element at ``selector``, read in one script.

    Read element by element, a re-render between finding and reading (a live update, the
    turn timer) leaves a stale element; one script runs between two of the page's renders.
    """
    script = (
        "return [...document.querySelectorAll(arguments[0])]"
        ".map(e => e.getAttribute(arguments[1]) || '')"
    )
    return list(driver.execute_script(script, selector, attribute))


def hand_cards(driver: Any) -> list[str]:
    return cards_at(driver, ".hand [data-card]")


def table_melds(driver: Any) -> list[list[str]]:
    script = (
        "return [...document.querySelectorAll('.felt .meld')]"
        ".map(m => [...m.querySelectorAll('[data-card]')].map(e => e.dataset.card))"
    )
    return [list(meld) for meld in driver.execute_script(script)]


def on_table(driver: Any) -> list[str]:
    return cards_at(driver, ".felt .meld [data-card]")


def in_hand(driver: Any, card: str) -> Any:
    return one(driver, f'.hand [data-card="{card}"]')


def meld(driver: Any, number: int) -> Any:
    return wait(driver, lambda d: css(d, ".felt .meld")[number - 1], f"meld {number}")


def moved(driver: Any) -> list[str]:
    return cards_at(driver, ".felt .card.moved")


def button(driver: Any, focus: str) -> Any:
    return one(driver, f'[data-focus="{focus}"]')


def turn_line(driver: Any) -> str:
    return str(text(driver, "#turn-line"))


def fits_the_width(driver: Any) -> bool:
    """Nothing makes the page scroll sideways."""
    return bool(
        driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    )


def browser_errors(driver: Any) -> list[str]:
    """Script errors on the page (a refused command's 4xx answer is expected, not an error)."""
    return [
        e["message"]
        for e in driver.get_log("browser")
        if e["level"] == "SEVERE" and "Failed to load resource" not in e["message"]
    ]


def tokens(driver: Any, game_id: str) -> dict[str, Any]:
    """What the page stored for the game (read, not used to drive the page)."""
    stored = json.loads(driver.execute_script("return localStorage.getItem('rummy.games.v1')"))
    return dict(stored[game_id])


def draw_the_stock(server: Server, game_id: str, seat_tokens: dict[int, str]) -> int:
    """Each seat in turn draws, until the stock is empty."""
    commands = 0
    for _ in range(400):
        status, view, _ = server.call("GET", f"/api/games/{game_id}")
        assert status == 200, view
        if view["stock"] == 0:
            return commands
        seat = view["turn"]["seat"]
        body = {"id": f"draw-{commands}", "type": "draw"}
        status, answer, _ = server.call(
            "POST", f"/api/games/{game_id}/commands", body, token=seat_tokens[seat]
        )
        if status == 429:
            time.sleep(0.5)
            continue
        assert status == 200, answer
        commands += 1
    raise AssertionError(f"the stock is not empty after {commands} draws")


# --- the static client and the rules endpoint ------------------------------------------------


def test_the_client_is_served_with_its_files_and_the_rules(server: Server) -> None:
    status, page, headers = server.call("GET", "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert '<script type="module" src="/web/js/main.js">' in page
    assert "/api/games" in page  # the API is named for readers without JavaScript
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    for name in ("js/main.js", "js/game.js", "js/table.js", "js/hand.js", "js/turn.js"):
        status, body, headers = server.call("GET", f"/web/{name}")
        assert status == 200 and headers["Content-Type"].startswith("text/javascript"), name
        assert "export" in body or "import" in body
    status, _, headers = server.call("GET", "/web/css/base.css")
    assert status == 200 and headers["Content-Type"].startswith("text/css")
    etag = headers["ETag"]
    base = f"{server.url}/web/css/base.css"
    request = urllib.request.Request(base, headers={"If-None-Match": etag})
    with pytest.raises(urllib.error.HTTPError) as revalidated:
        urllib.request.urlopen(request, timeout=5)
    assert revalidated.value.code == 304  # not modified: the browser keeps its copy
    for path in ("/web/../static_routes.py", "/web/%2e%2e/app.py", "/web/js/nope.js", "/web/"):
        status, body, _ = server.call("GET", path)
        assert status == 404, path

    status, rules, _ = server.call("GET", "/api/rules")
    assert status == 200
    from shared.core.rulesets import OPTIONS as SPECS
    from shared.core.rulesets import PRESETS

    assert set(rules["presets"]) == set(PRESETS)
    assert set(rules["options"]) == set(SPECS)
    for name, spec in SPECS.items():
        shown = rules["options"][name]
        assert shown["help"] == spec.help and shown["allowed"] == spec.allowed()
        assert shown["kind"] == spec.kind
        for preset, values in PRESETS.items():
            assert shown["defaults"][preset] == getattr(values, name)
    assert rules["options"]["match"]["choices"] == list(SPECS["match"].choices)
    assert rules["options"]["hand_size"]["low"] == 1


# --- a whole game in two browsers ---------------------------------------------------------------


def create_game_in_the_lobby(ann: Any, server: Server, shots: Path) -> str:
    ann.get(f"{server.url}/")
    one(ann, "#opt-opening_points")
    _, rules, _ = server.call("GET", "/api/rules")
    for name, spec in rules["options"].items():  # every option is explained where it is set
        help_text = attr(ann, f"#help-{name}", "textContent")  # some are folded
        assert spec["help"] in help_text and "Allowed:" in help_text, name
        assert "Default for robbers: " in help_text, name
        assert attr(ann, f"#opt-{name}", "aria-describedby") == f"help-{name}"
    from selenium.webdriver.support.ui import Select

    # A value out of range: the server's refusal names the option, and its row is marked.
    one(ann, "#opt-hand_size").send_keys("60")
    click(ann, ".create-form button[type=submit]")
    refusal = wait(ann, lambda d: text(d, ".create-form .form-message"), "the refusal")
    assert "hand_size" in refusal and "1 to 52" in refusal, refusal
    assert "refused" in attr(ann, '[data-option="hand_size"]', "class")
    assert ann.switch_to.active_element.get_attribute("id") == "opt-hand_size"
    one(ann, "#opt-hand_size").clear()  # back to the preset's null
    wait(ann, lambda d: not text(d, ".create-form .form-message"), "the refusal cleared")

    for name in ("opening_points", "turn_seconds"):
        field = one(ann, f"#opt-{name}")
        field.clear()
        field.send_keys(str(OPTIONS[name]))
    Select(one(ann, "#opt-match")).select_by_value(str(OPTIONS["match"]))
    assert len(css(ann, ".option.changed")) == 3  # the changed options are marked
    click(ann, "details.more-options summary")  # unfold the rest for the screenshot
    click(ann, "details.advanced summary")
    one(ann, "#deal-seed").send_keys(SERVER_SEED)
    snap(ann, shots, "01-lobby-create-game")
    click(ann, ".create-form button[type=submit]")
    wait(ann, lambda d: "#/game/g" in d.current_url, "the new game's page")
    game_id = ann.current_url.split("#/game/")[1].split("/")[0]
    one(ann, "#share-link")
    assert attr(ann, "#share-link", "value").endswith(f"#/game/{game_id}")
    return game_id


def take_seat(driver: Any, name: str, seed: str = "") -> None:
    field = one(driver, "#join-name")
    field.clear()
    field.send_keys(name)
    if seed:
        click(driver, "details.seed summary")
        one(driver, "#join-seed").send_keys(seed)
    click(driver, '[data-focus="join"]')
    wait(driver, lambda d: any("you" in li.text.lower() for li in css(d, ".seat-list li")), "seat")


def test_two_players_play_a_game_in_two_browsers(
    server: Server, browser: Browser, shots: Path
) -> None:
    ann = browser()
    game_id = create_game_in_the_lobby(ann, server, shots)
    take_seat(ann, "Ann")

    # The second player finds the game waiting in the lobby, then joins by its link with a seed
    # of their own (the one the search chose, so the test knows the deal).
    plan: Plan = find_plan(game_id)
    bo = browser()
    bo.get(f"{server.url}/")
    row = one(bo, f'.game-row[data-game="{game_id}"]')
    assert "Ann" in row.text and "1 of 2 seats taken" in row.text
    bo.get(f"{server.url}/#/game/{game_id}")
    take_seat(bo, "Bo", plan.seed)

    # The host's page learns of Bo by itself (WebSocket) and the host starts the game.
    start = button(ann, "start")
    wait(ann, lambda d: button(d, "start").is_enabled(), "the start button to be enabled")
    assert "Bo" in text(ann, ".seat-list")
    snap(ann, shots, "02-waiting-room")
    press(ann, "start")

    windows = {0: ann, 1: bo}
    s, o = windows[plan.starter], windows[plan.other]
    wait(s, lambda d: turn_line(d) == "Your turn", "the starter's turn")
    wait(o, lambda d: turn_line(d).endswith("'s turn"), "the other seat's table")
    assert Counter(hand_cards(s)) == Counter(plan.hands[plan.starter])
    assert Counter(hand_cards(o)) == Counter(plan.hands[plan.other])
    assert "4:" in text(s, "#turn-timer") or "5:00" in text(s, "#turn-timer")
    players = text(o, ".players")
    assert "Ann" in players and "Bo" in players and "13" in players

    # Turn 1, first try: two cards of the run and a card of another suit are no meld.
    run, (x, y) = plan.run, plan.pair
    drag(s, in_hand(s, run[0]), one(s, ".new-meld"))
    wait(s, lambda d: table_melds(d) == [[run[0]]], "a new meld")
    drag(s, in_hand(s, run[1]), meld(s, 1))
    drag(s, in_hand(s, x), meld(s, 1))
    wait(s, lambda d: Counter(table_melds(d)[0]) == Counter([run[0], run[1], x]), "3 cards")
    assert Counter(moved(s)) == Counter([run[0], run[1], x])  # what moved is highlighted
    assert len(hand_cards(s)) == 10
    press(s, "play")
    refusal = wait(
        s,
        lambda d: css(d, ".message.error")[0] if css(d, ".message.error") else None,
        "the refusal",
    )
    assert "The referee refused this layout" in refusal.text
    assert "Meld 1 [" in refusal.text and "neither a set" in refusal.text, refusal.text
    assert css(s, ".felt .meld.invalid"), "the refused meld is marked"
    snap(s, shots, "03-layout-refused")

    # Undo: back to the table as it was (empty), every card back in the hand.
    press(s, "undo")
    wait(s, lambda d: table_melds(d) == [] and len(hand_cards(d)) == 13, "the undone table")
    assert not css(s, ".message.error")

    # Turn 1 again: the run of four, card by card.
    drag(s, in_hand(s, run[0]), one(s, ".new-meld"))
    wait(s, lambda d: len(table_melds(d)) == 1, "a new meld")
    for card in run[1:]:
        drag(s, in_hand(s, card), meld(s, 1))
    wait(s, lambda d: Counter(moved(d)) == Counter(run), "the run highlighted")
    press(s, "play")
    wait(s, lambda d: "accepted" in text(d, ".message"), "the accepted play")
    wait(s, lambda d: len(hand_cards(d)) == 9 and not moved(d), "the new table")
    # The other window sees the play by itself, and it is its turn.
    wait(o, lambda d: Counter(on_table(d)) == Counter(run), "the run on O's table")
    wait(o, lambda d: turn_line(d) == "Your turn", "O's turn")
    snap(o, shots, "04-table-after-the-first-play")

    # Turn 2 (O): two cards from the hand make two new melds, merged by dragging a meld's grip
    # onto the other and split again with the scissors between them; a table card cannot go to
    # the hand; Undo puts it all back.
    h1, h2 = hand_cards(o)[:2]
    drag(o, in_hand(o, h1), one(o, ".new-meld"))
    wait(o, lambda d: table_melds(d)[1:] == [[h1]], "a first new meld")
    drag(o, in_hand(o, h2), one(o, ".new-meld"))
    wait(o, lambda d: table_melds(d)[1:] == [[h1], [h2]], "a second new meld")
    drag(o, css(o, ".felt .meld")[2].find_element("css selector", ".meld-grip"), meld(o, 2))
    wait(o, lambda d: table_melds(d)[1:] == [[h1, h2]], "the merged meld")
    meld(o, 2).find_element("css selector", "button.cut").click()
    wait(o, lambda d: table_melds(d)[1:] == [[h1], [h2]], "the meld split again")
    drag(o, one(o, f'.felt .meld [data-card="{run[0]}"]'), one(o, ".hand"))
    warning = text(o, ".message.warn")
    assert "stay on the table" in warning, warning
    assert table_melds(o)[0] == list(run) or Counter(table_melds(o)[0]) == Counter(run)
    press(o, "undo")
    wait(o, lambda d: len(table_melds(d)) == 1 and len(hand_cards(d)) == 13, "undone")

    # Then the keyboard picks a card up and drops it on "+ New meld"; Undo again; Draw.
    from selenium.webdriver.common.keys import Keys

    first = css(o, ".hand [data-card]")[0]
    picked = first.get_attribute("data-card")
    first.send_keys(Keys.ENTER)
    wait(o, lambda d: css(d, ".card.held"), "a held card")
    o.switch_to.active_element.send_keys(Keys.ARROW_LEFT)  # from the hand to "+ New meld"
    wait(o, lambda d: "drop-cursor" in attr(d, ".new-meld", "class"), "the cursor")
    snap(o, shots, "05-keyboard-card-held", full_page=False)
    o.switch_to.active_element.send_keys(Keys.ENTER)
    wait(o, lambda d: len(table_melds(d)) == 2 and table_melds(d)[1] == [picked], "a kbd drop")
    assert o.switch_to.active_element.get_attribute("data-card") == picked  # focus follows
    press(o, "undo")
    wait(o, lambda d: len(table_melds(d)) == 1 and len(hand_cards(d)) == 13, "undone")
    press(o, "draw")
    wait(s, lambda d: turn_line(d) == "Your turn", "S's second turn")
    wait(o, lambda d: len(hand_cards(d)) == 14, "O's drawn card")

    # Turn 3 (S): split the run's end card off into a new meld and add the pair: a set.
    drag(s, one(s, f'.felt .meld [data-card="{plan.end}"]'), one(s, ".new-meld"))
    wait(s, lambda d: len(table_melds(d)) == 2, "the split")
    drag(s, in_hand(s, x), meld(s, 2))
    drag(s, in_hand(s, y), meld(s, 2))
    wait(s, lambda d: Counter(moved(d)) == Counter([plan.end, x, y]), "3 moved cards")
    snap(s, shots, "06-rearranged-before-play")
    press(s, "play")
    wait(s, lambda d: len(hand_cards(d)) == 7 and not moved(d), "the accepted rearrangement")
    wait(o, lambda d: len(table_melds(d)) == 2, "O sees two melds")
    wait(o, lambda d: turn_line(d) == "Your turn", "O's second turn")

    # Turn 4 (O) on a phone-sized screen: add a card to a meld with a finger.
    o.set_window_size(390, 844)
    time.sleep(0.3)
    assert fits_the_width(o), "the table scrolls sideways on a phone"
    snap(o, shots, "07-phone-table", full_page=False)
    snap(o, shots, "07-phone-table-whole-page")
    o.execute_script("document.querySelector('.felt').scrollIntoView({block: 'start'})")
    o.execute_script(  # watch (only) which kind of pointer the page gets
        "window.kinds = []; addEventListener('pointerdown', e => kinds.push(e.pointerType), true)"
    )
    touch_drag(o, in_hand(o, plan.extra), meld(o, plan.extra_meld))
    wait(o, lambda d: moved(d) == [plan.extra], "the card added by touch")
    assert o.execute_script("return window.kinds") == ["touch"]
    press(o, "play")
    wait(o, lambda d: len(hand_cards(d)) == 13 and not moved(d), "O's accepted play")
    wait(s, lambda d: plan.extra in on_table(d), "S sees O's card")
    o.set_window_size(1280, 900)

    # The rest of the stock is drawn over the API (both pages follow), then both seats pass
    # with the Pass button that an empty stock brings: the round stalls and the game ends.
    seat_tokens = {0: tokens(ann, game_id)["token"], 1: tokens(bo, game_id)["token"]}
    assert tokens(ann, game_id)["host"]
    draw_the_stock(server, game_id, seat_tokens)
    for _ in range(2):
        _, view, _ = server.call("GET", f"/api/games/{game_id}")
        passer = windows[view["turn"]["seat"]]
        wait(passer, lambda d: css(d, '[data-focus="pass"]:not([disabled])'), "the Pass button")
        assert not button(passer, "draw").is_enabled()
        press(passer, "pass")
        before = view["version"]
        wait(
            server,
            lambda srv, before=before: (
                srv.call("GET", f"/api/games/{game_id}")[1]["version"] > before
            ),
            "the pass",
        )
    for driver in (ann, bo):
        wait(driver, lambda d: "Game over" in text(d, "#result-title"), "the game's end")
    snap(ann, shots, "08-game-over")

    # The replay: turn 1 holds the refused layout and the run, with the run highlighted.
    click(ann, ".result-links a.primary")
    wait(ann, lambda d: "Turn 1:" in text(d, "#turn-title"), "the replay of turn 1")
    commands = text(ann, ".commands").lower()
    assert "refused" in commands and "invalid_meld" in commands and "neither a set" in commands
    assert "accepted" in commands and "legal. played" in commands
    after = cards_at(ann, ".replay-table .card.moved")
    assert Counter(after) == Counter(run)
    snap(ann, shots, "09-replay-turn-1")
    press(ann, "next")
    wait(ann, lambda d: "Turn 2:" in text(d, "#turn-title"), "turn 2")
    assert "drew" in text(ann, ".commands")
    press(ann, "next")
    wait(ann, lambda d: "Turn 3:" in text(d, "#turn-title"), "turn 3")
    after = cards_at(ann, ".replay-table .card.moved")
    assert Counter(after) == Counter([plan.end, x, y])
    snap(ann, shots, "10-replay-turn-3")
    press(ann, "prev")
    wait(ann, lambda d: "Turn 2:" in text(d, "#turn-title"), "back to turn 2")
    one(ann, "body").send_keys(Keys.ARROW_RIGHT)  # the arrow keys step too
    wait(ann, lambda d: "Turn 3:" in text(d, "#turn-title"), "turn 3 by keyboard")
    assert ann.current_url.endswith(f"#/game/{game_id}/replay/3")
    ann.set_window_size(390, 844)
    time.sleep(0.3)
    assert fits_the_width(ann), "the replay scrolls sideways on a phone"
    snap(ann, shots, "10-replay-turn-3-phone")
    ann.set_window_size(1280, 900)
    link = attr(ann, "#download", "href")
    assert link.endswith(f"/api/games/{game_id}/export")
    status, record, _ = server.call("GET", f"/api/games/{game_id}/export")
    assert status == 200 and game_id in record

    # The lobby lists the game as finished.
    bo.get(f"{server.url}/#/")
    click(bo, "#tab-finished")
    wait(bo, lambda d: css(d, f'.game-row[data-game="{game_id}"]'), "the finished game")
    bo.set_window_size(390, 844)
    time.sleep(0.3)
    assert fits_the_width(bo), "the lobby scrolls sideways on a phone"
    bo.execute_script("document.querySelector('.games-panel').scrollIntoView()")
    snap(bo, shots, "10-lobby-finished-games-phone", full_page=False)
    for driver in (ann, bo):
        assert browser_errors(driver) == []
    assert start is not None


def test_a_spectator_sees_no_hand_and_rummikub_is_drawn_as_tiles(
    server: Server, browser: Browser, shots: Path
) -> None:
    # A started rummikub game made over the API, watched in a phone-sized window.
    body = {"rules": "rummikub", "seats": 2, "seed": SERVER_SEED}
    status, created, _ = server.call("POST", "/api/games", body)
    assert status == 201, created
    game_id = created["game_id"]
    seats = []
    for name in ("Cy", "Di"):
        status, seat, _ = server.call("POST", f"/api/games/{game_id}/seats", {"name": name})
        assert status == 201, seat
        seats.append(seat)
    status, _, _ = server.call("POST", f"/api/games/{game_id}/start", token=created["host_token"])
    assert status == 200
    watcher = browser(390, 844)
    watcher.get(f"{server.url}/#/game/{game_id}/watch")
    wait(watcher, lambda d: turn_line(d).endswith("'s turn"), "the spectator's table")
    assert not css(watcher, ".hand") and not css(watcher, '[data-focus="draw"]')
    assert "spectator" in text(watcher, ".spectator")
    players = text(watcher, ".players")
    assert "Cy" in players and "Di" in players and "14" in players
    wait(watcher, lambda d: "Live" in text(d, "#connection"), "the live connection")
    assert text(watcher, "#turn-timer").endswith("left")  # rummikub's 60-second timer
    assert fits_the_width(watcher)
    snap(watcher, shots, "11-spectator-phone", full_page=False)

    # The same window with Cy's seat token (as if Cy had taken the seat here): tiles.
    token = json.dumps({game_id: {"token": seats[0]["token"], "seat": 0, "name": "Cy"}})
    watcher.execute_script("localStorage.setItem('rummy.games.v1', arguments[0])", token)
    watcher.get(f"{server.url}/#/")
    watcher.get(f"{server.url}/#/game/{game_id}")
    wait(watcher, lambda d: len(css(d, ".hand .card.tile")) == 14, "Cy's fourteen tiles")
    _, view, _ = server.call("GET", f"/api/games/{game_id}", token=seats[0]["token"])
    assert Counter(hand_cards(watcher)) == Counter(view["hand"])
    colours = {
        cls
        for classes in cards_at(watcher, ".hand .card.tile", "class")
        for cls in classes.split()
        if cls.startswith("tile-") or cls == "joker"
    }
    assert colours <= {"tile-black", "tile-red", "tile-orange", "tile-blue", "joker"}
    assert len(colours) >= 2
    label = cards_at(watcher, ".hand .card.tile", "aria-label")[0]
    assert label.endswith("tile"), label
    snap(watcher, shots, "12-rummikub-tiles-phone", full_page=False)
    assert browser_errors(watcher) == []


def api_game(server: Server, rules: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """A started two-seat game made over the API: its id, host token and seat tokens."""
    body = {"rules": rules, "seats": 2, "options": options or {}, "seed": SERVER_SEED}
    status, created, _ = server.call("POST", "/api/games", body)
    assert status == 201, created
    game_id = created["game_id"]
    tokens = []
    for name in ("Eve", "Fay"):
        status, seat, _ = server.call("POST", f"/api/games/{game_id}/seats", {"name": name})
        assert status == 201, seat
        tokens.append(seat["token"])
    status, view, _ = server.call(
        "POST", f"/api/games/{game_id}/start", token=created["host_token"]
    )
    assert status == 200, view
    return {"id": game_id, "tokens": tokens, "turn": view["turn"]["seat"]}


def open_as_seat(driver: Any, url: str, game_id: str, seat: int, token: str) -> None:
    """Open the game as ``seat`` (its token put where the page keeps it: test set-up only)."""
    keys = json.dumps({game_id: {"token": token, "seat": seat}})
    driver.execute_script("localStorage.setItem('rummy.games.v1', arguments[0])", keys)
    driver.get(f"{url}/#/")
    driver.get(f"{url}/#/game/{game_id}")
    wait(driver, lambda d: turn_line(d) == "Your turn", "the seat's turn")


def test_the_turn_buttons_of_each_variant(server: Server, browser: Browser, shots: Path) -> None:
    driver = browser()
    driver.get(f"{server.url}/")
    one(driver, "#rules")

    # robbers-classic: place, draw, place, then End turn.
    game = api_game(server, "robbers-classic")
    seat = game["turn"]
    open_as_seat(driver, server.url, game["id"], seat, game["tokens"][seat])
    assert not button(driver, "end").is_enabled()  # nothing placed or drawn yet
    assert not css(driver, '[data-focus="pass"]')  # the stock is full
    press(driver, "draw")
    wait(driver, lambda d: button(d, "end").is_enabled(), "End turn after a draw")
    assert not button(driver, "draw").is_enabled()  # one draw a turn
    press(driver, "end")
    wait(driver, lambda d: turn_line(d).endswith("'s turn"), "the next seat's turn")
    _, view, _ = server.call("GET", f"/api/games/{game['id']}")
    assert view["turn"]["seat"] == 1 - seat and view["turn"]["number"] == 2
    # The replay of the game so far, from the table's link.
    click(driver, ".game-links a")
    wait(driver, lambda d: "Turn 1:" in text(d, "#turn-title"), "the replay of turn 1")
    commands = text(driver, ".commands")
    assert "Drew " in commands and "Ended the turn." in commands, commands
    assert not css(driver, "#download")  # the record comes once the game has ended

    # The discard-pile variant: draw (stock or pile), then discard the chosen card.
    game = api_game(server, "robbers", {"discard_pile": True})
    seat = game["turn"]
    open_as_seat(driver, server.url, game["id"], seat, game["tokens"][seat])
    assert "from the pile" in button(driver, "draw-pile").text
    assert not button(driver, "discard").is_enabled()
    assert attr(driver, ".pile", "aria-label").startswith("Discard pile (1)")
    press(driver, "draw")
    wait(driver, lambda d: len(hand_cards(d)) == 14, "the drawn card")
    chosen = css(driver, ".hand [data-card]")[-1]
    card = chosen.get_attribute("data-card")
    chosen.click()
    wait(driver, lambda d: css(d, ".hand .card.selected"), "the chosen card")
    snap(driver, shots, "13-discard-pile-variant")
    press(driver, "discard")
    wait(driver, lambda d: turn_line(d).endswith("'s turn"), "the turn after the discard")
    _, view, _ = server.call("GET", f"/api/games/{game['id']}")
    assert view["discard"] == card and view["discard_count"] == 2
    assert browser_errors(driver) == []


def test_the_table_reconnects_by_itself_and_catches_up(
    server: Server, browser: Browser, shots: Path
) -> None:
    game = api_game(server, "robbers")
    proxy = Proxy(server.port)  # the page reaches the server through a line the test can cut
    try:
        watcher = browser()
        watcher.get(f"{proxy.url}/#/game/{game['id']}/watch")
        wait(watcher, lambda d: "Live" in text(d, "#connection"), "the live connection")
        assert "turn 1" in text(watcher, ".facts")

        proxy.cut()
        wait(watcher, lambda d: "Reconnecting" in text(d, "#connection"), "the lost line")
        for number in (1, 2):  # two turns while the page is offline
            _, view, _ = server.call("GET", f"/api/games/{game['id']}")
            seat = view["turn"]["seat"]
            body = {"id": f"offline-{number}", "type": "draw"}
            status, answer, _ = server.call(
                "POST", f"/api/games/{game['id']}/commands", body, token=game["tokens"][seat]
            )
            assert status == 200, answer
        time.sleep(1.0)
        assert "turn 1" in text(watcher, ".facts")  # it cannot know yet
        snap(watcher, shots, "14-reconnecting", full_page=False)

        proxy.restore()
        wait(watcher, lambda d: "Live" in text(d, "#connection"), "the reconnection", 20)
        wait(watcher, lambda d: "turn 3" in text(d, ".facts"), "the caught-up table")
        log = text(watcher, ".log")
        assert log.count("drew 1 card") == 2, log  # the events it missed, sent on reconnecting
        assert "Turn 3:" in log and "Turn 2:" in log
        assert browser_errors(watcher) == [] or all(
            "ERR_CONNECTION" in e or "WebSocket" in e for e in browser_errors(watcher)
        )
    finally:
        proxy.close()
