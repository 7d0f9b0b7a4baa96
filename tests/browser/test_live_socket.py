"""The web client's live socket (``web/js/live.js``) when the server says it could not answer, in
headless Chromium: the module as the page loads it, its sockets a stand-in the test drives (a
server that fails on cue cannot be had from `rummy serve`). Told ``internal`` or ``unavailable``
(a catch-up the server could not read, its Redis away), it asks again for what it missed, with
?after= the version it saw, and takes the view that comes; any other error frame is the
answer to something it sent and changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import Browser, Server

# Loads live.js, stands a scripted socket in for WebSocket, starts a Live at version 5 and
# reports the URLs it connected to and the views it took. Each socket opens, then sends the
# next frame of ``arguments[0]`` (one per connection); the test ends at the first view taken,
# or a grace after the last frame (time the client's first backoff, at most 0.625 s, fits in
# three times over: a reconnect it missed would only make the test pass wrongly, never fail).
SCRIPT = """
const [frames, done] = [arguments[0], arguments[arguments.length - 1]];
const { Live } = await import("/web/js/live.js");
const urls = [];
const views = [];
let live = null;
let over = false;
const finish = () => {
  if (over) return;
  over = true;
  live.stop();
  done({ urls, views });
};
class Scripted extends EventTarget {
  constructor(url) {
    super();
    this.readyState = 0;
    const frame = frames[urls.length];
    urls.push(url);
    setTimeout(() => {
      this.readyState = 1;
      this.dispatchEvent(new Event("open"));
      if (frame !== undefined) {
        this.dispatchEvent(new MessageEvent("message", { data: JSON.stringify(frame) }));
      }
      if (urls.length >= frames.length) setTimeout(finish, 2000);
    }, 0);
  }
  send() {}
  close(code) {
    this.readyState = 3;
    setTimeout(() => this.dispatchEvent(new CloseEvent("close", { code })), 0);
  }
}
window.WebSocket = Scripted;
live = new Live("gaaaaaaaaaaaaaaaa", "", {
  onView: (view) => { views.push(view.version); finish(); },
});
live.start(5);
"""


def failed(code: str) -> dict[str, Any]:
    return {"type": "error", "error": {"code": code, "message": "the server failed to answer"}}


def run(server: Server, browser: Browser, frames: list[dict[str, Any]]) -> dict[str, Any]:
    driver = browser()
    driver.set_script_timeout(30)  # a safety net: each step waits on the client, not a clock
    driver.get(f"{server.url}/#/")
    result: dict[str, Any] = driver.execute_async_script(SCRIPT, frames)
    return result


@pytest.mark.parametrize("code", ["internal", "unavailable"])
def test_a_socket_the_server_could_not_answer_asks_again_for_what_it_missed(
    server: Server, browser: Browser, code: str
) -> None:
    view = {"type": "view", "view": {"version": 9}}
    result = run(server, browser, [failed(code), view])
    assert len(result["urls"]) == 2, result
    assert all(url.endswith("after=5") for url in result["urls"]), result
    assert result["views"] == [9]


def test_an_answer_to_what_the_client_sent_is_no_reason_to_reconnect(
    server: Server, browser: Browser
) -> None:
    result = run(server, browser, [failed("bad_json")])
    assert len(result["urls"]) == 1, result
    assert result["views"] == []
