"""A real browser for the tests that look at a page as a person does: headless Chromium,
driven by Selenium through chromedriver.

Debian's ``chromium`` and ``chromium-driver`` packages give ``/usr/bin/chromium`` and
``/usr/bin/chromedriver`` (``.ci/run`` installs them; ``IOA_CHROMIUM`` and
``IOA_CHROMEDRIVER`` name others). Selenium is told both paths, so it never looks for, or
downloads, a browser or a driver of its own. Where either is missing the test skips and says
which; in CI (``IOA_CI`` set, as ``.ci/run`` sets it) it fails instead, since CI must run them.

What a test gets (the ``browser`` fixture in conftest.py):

* :class:`Browser`: ``open(url)``, the Selenium ``driver`` itself, ``console_errors()`` (every
  error the page's console logged since it opened, collected through the ``goog:loggingPrefs``
  browser log), ``screenshot(name)`` into the test's own output folder (its ``tmp_path``,
  under pytest's base temporary folder: ``/tmp/pytest-of-USER/pytest-N/TEST-NAME0/``, of
  which pytest keeps the last three runs; ``--basetemp=DIR`` puts them elsewhere);
* :func:`served`: a server started as a real process on loopback, waited for until it
  answers, stopped with SIGTERM at the end, its output kept in the test's folder; so a page a
  server serves is opened in a few lines::

      port = free_port()
      with served([IOA_CHECK, "serve", "--profile", "cs-translation", "--port", str(port)],
                  port, tmp_path) as base:
          driver = browser.open(base + "/")
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

CHROMIUM = os.environ.get("IOA_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("IOA_CHROMEDRIVER", "/usr/bin/chromedriver")
# Generous bounds that only catch a hang: a page of this project loads in well under a second.
PAGE_SECONDS = 60
START_SECONDS = 60


def missing() -> str | None:
    """Why no browser can be started here, or None when one can."""
    try:
        import selenium  # noqa: F401
    except ModuleNotFoundError:
        return "selenium is not installed (pip install '.[test]')"
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return f"{path} is not installed (apt-get install {package})"
    return None


def require_browser(*, module: bool = False) -> None:
    """Skip the test (``module``: every test of the calling module, called at its top), with
    the reason, where no browser can be started; fail it in CI."""
    reason = missing()
    if reason is None:
        return
    if os.environ.get("IOA_CI"):
        pytest.fail(f"{reason}; CI (IOA_CI is set) must run the browser tests: .ci/run "
                    "installs chromium and chromium-driver", pytrace=False)
    pytest.skip(reason, allow_module_level=module)


class Browser:
    """One headless Chromium session; what its pages logged as errors; screenshots."""

    def __init__(self, driver: Any, folder: Path) -> None:
        self.driver = driver
        self.folder = folder
        self._errors: list[dict[str, Any]] = []

    def open(self, url: str) -> Any:
        """The driver, on ``url`` once it has loaded."""
        self.driver.get(url)
        return self.driver

    def console_errors(self) -> list[dict[str, Any]]:
        """Every error logged in the console since the session started (an uncaught
        exception, a refused resource, a Content-Security-Policy violation, console.error)."""
        # The browser log hands each entry out once: collected here as it is read.
        self._errors.extend(entry for entry in self.driver.get_log("browser")
                            if entry.get("level") == "SEVERE")
        return list(self._errors)

    def screenshot(self, name: str) -> Path:
        """The viewport as ``name``.png in the test's folder; its path."""
        path = self.folder / f"{name}.png"
        if not self.driver.save_screenshot(str(path)):
            raise AssertionError(f"no screenshot could be written to {path}")
        return path

    def full_page_screenshot(self, name: str) -> Path:
        """The whole page, as tall as it is (at most 8,000 pixels), as ``name``.png."""
        height = self.driver.execute_script("return document.documentElement.scrollHeight")
        width = self.driver.get_window_size()["width"]
        self.driver.set_window_size(width, min(int(height) + 100, 8000))
        try:
            return self.screenshot(name)
        finally:
            self.driver.set_window_size(width, 900)


@contextmanager
def chromium(folder: Path, *, javascript: bool = True, width: int = 1280,
             height: int = 900, downloads: Path | None = None) -> Iterator[Browser]:
    """A headless Chromium session, quit at the end; ``javascript=False`` runs none;
    ``downloads``: the folder where what a page downloads is saved, without asking."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    # A profile of its own, removed at the end: the test's folder keeps what a person looks at.
    stack = ExitStack()
    profile = stack.enter_context(tempfile.TemporaryDirectory(prefix="ioa-chromium-"))
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
            "--headless=new",
            # As root (CI) Chromium's sandbox cannot start; the pages are the tests' own.
            "--no-sandbox",
            # /dev/shm is small in containers; Chromium then writes its shared memory to /tmp.
            "--disable-dev-shm-usage",
            "--disable-gpu",
            f"--window-size={width},{height}",
            # Nothing is fetched from outside: no update, sync, safe-browsing or metrics traffic.
            "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--metrics-recording-only",
            "--disable-extensions", "--lang=en-US",
            f"--user-data-dir={profile}"):
        options.add_argument(argument)
    prefs: dict[str, Any] = {}
    if not javascript:
        prefs["profile.managed_default_content_settings.javascript"] = 2
    if downloads is not None:
        prefs.update({"download.default_directory": str(downloads),
                      "download.prompt_for_download": False})
    if prefs:
        options.add_experimental_option("prefs", prefs)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=CHROMEDRIVER, log_output=str(folder / "chromedriver.log"))
    with stack:
        driver = webdriver.Chrome(service=service, options=options)
        try:
            driver.set_page_load_timeout(PAGE_SECONDS)
            yield Browser(driver, folder)
        finally:
            driver.quit()


def free_port() -> int:
    """A loopback port free now (the server that is given it binds it a moment later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def served(argv: Sequence[str], port: int, folder: Path, *, ready: str = "/healthz",
           cwd: Path | None = None) -> Iterator[str]:
    """A server process started with ``argv`` (which makes it listen on ``port`` of
    127.0.0.1), once ``ready`` answers 200: its base URL. At the end it is sent SIGTERM (and
    killed if it does not stop); what it printed is in ``folder``/server.log."""
    log_path = folder / "server.log"
    base = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        process = subprocess.Popen(list(argv), cwd=cwd or folder, stdout=log,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            _wait_until_ready(process, base + ready, log_path)
            yield base
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=START_SECONDS)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


@contextmanager
def serving_the_page(folder: Path) -> Iterator[str]:
    """``ioa-check serve --profile cs-translation`` on a free port (the page's tests' service):
    its base URL."""
    from support import IOA_CHECK

    port = free_port()
    with served([IOA_CHECK, "serve", "--profile", "cs-translation", "--port", str(port)],
                port, folder) as base:
        yield base


def _wait_until_ready(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while True:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with status {process.returncode} before "
                                 f"{url} answered:\n{log.read_text(errors='replace')}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass  # not listening yet
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} did not answer 200 within {START_SECONDS} s:\n"
                                 f"{log.read_text(errors='replace')}")
        time.sleep(0.1)


def static_server(folder: Path, port: int) -> list[str]:
    """Python's own file server over ``folder`` on ``port`` (for :func:`served`, with
    ``ready="/"``): a page that needs http:// rather than file://."""
    return [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory",
            str(folder), str(port)]
