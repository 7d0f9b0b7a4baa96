"""The browser tests' fixtures: `rummy serve` in a subprocess, headless Chromium through Selenium
and chromedriver (Debian's chromium and chromium-driver), and a folder for the screenshots.

Without Chromium (or Selenium) the tests are skipped with the reason; CI installs both
(.ci/run), so there they always run. RUMMY_BROWSER_SCREENSHOTS=<dir> keeps the screenshots in a
folder of your choosing; otherwise they go to a temporary folder that the run prints.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ports import spare_port
from tests.servers import START_TIMEOUT, url_ok, wait_until

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
SHOTS: list[Path] = []  # the screenshot folder of this run, printed at the end


class Server:
    """`rummy serve --allow-seeded-games` on a spare port, with its output in a file."""

    def __init__(self, logs: Path) -> None:
        self.port = spare_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = logs / "serve.log"
        env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
        env = {k: v for k, v in env.items() if not k.startswith("RUMMY_")}
        env |= {"RUMMY_LOG_LEVEL": "warning", "PYTHONUNBUFFERED": "1"}
        # The browsers and the tests' own API calls all come from 127.0.0.1, some playing
        # games as fast as the machine goes: no limit per address over every route.
        env |= {"RUMMY_LIMIT_ADDRESS_PER_SECOND": "0"}
        self.out = self.log.open("wb")
        args = [sys.executable, "-m", "services.main", "serve", "--port", str(self.port)]
        self.popen = subprocess.Popen(
            [*args, "--allow-seeded-games"],
            cwd=ROOT,
            env=env,
            stdout=self.out,
            stderr=subprocess.STDOUT,
        )
        wait_until(
            self.ready,
            START_TIMEOUT,
            every=0.1,
            message=lambda: f"rummy serve did not get ready:\n{self.output()}",
        )

    def ready(self) -> bool:
        if self.popen.poll() is not None:
            raise AssertionError(f"rummy serve exited:\n{self.output()}")
        return url_ok(f"{self.url}/readyz")

    def output(self) -> str:
        self.out.flush()
        return self.log.read_text(errors="replace")[-4000:]

    def call(
        self, method: str, path: str, body: Any = None, token: str = ""
    ) -> tuple[int, Any, dict[str, str]]:
        """One HTTP request: (status, JSON body or text, headers)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=15) as reply:
                raw, status, headers = reply.read(), reply.status, dict(reply.headers)
        except urllib.error.HTTPError as err:
            raw, status, headers = err.read(), err.code, dict(err.headers)
        text = raw.decode(errors="replace")
        try:
            return status, json.loads(text), headers
        except ValueError:
            return status, text, headers

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(20)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self.out.close()


class Proxy:
    """A TCP relay in front of the server whose connections the test can cut (a network that
    drops): ``cut()`` closes every connection and refuses new ones until ``restore()``."""

    def __init__(self, port: int) -> None:
        self.upstream = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.refusing = False
        self.open: set[socket.socket] = set()
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.refusing:
                client.close()
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:
                client.close()
                continue
            with self.lock:
                self.open |= {client, server}
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, target):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            with self.lock:
                self.open -= {source, target}

    def cut(self) -> None:
        self.refusing = True
        with self.lock:
            sockets = list(self.open)
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def restore(self) -> None:
        self.refusing = False

    def close(self) -> None:
        self.cut()
        self.listener.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(tmp_path_factory.mktemp("serve"))
    try:
        yield running
    finally:
        running.stop()


def _need_browser() -> None:
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip(
            "Chromium and chromedriver are not installed (as root: apt-get install -y "
            "chromium chromium-driver); CI installs them in .ci/run"
        )
    pytest.importorskip("selenium", reason="selenium is missing: pip install -e '.[test]'")


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder for this run's screenshots (printed at the start and at the end)."""
    _need_browser()
    chosen = os.environ.get("RUMMY_BROWSER_SCREENSHOTS")
    folder = Path(chosen).resolve() if chosen else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    SHOTS.append(folder)
    print(f"\nbrowser screenshots: {folder}", file=sys.__stderr__, flush=True)
    return folder


Browser = Callable[..., Any]


@pytest.fixture
def browser() -> Iterator[Browser]:
    """Make headless Chromium windows (each its own profile, so its own localStorage)."""
    _need_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    made: list[Any] = []

    def make(width: int = 1280, height: int = 900) -> Any:
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for flag in (
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--lang=en-US",
            "--force-device-scale-factor=1",
        ):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
        driver.set_window_size(width, height)
        made.append(driver)
        return driver

    try:
        yield make
    finally:
        for driver in made:
            with contextlib.suppress(Exception):  # a crashed browser is already gone
                driver.quit()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for folder in SHOTS:
        terminalreporter.write_line(f"browser screenshots: {folder}")
