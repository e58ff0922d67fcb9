"""The service's page for people, as issue 38 (item 6) asks, in headless Chromium
(tests/browser.py): the result brought into view and focused after Check; a reasons table
whose codes read on one line; remedies applied with a click, then checked again; a sample
envelope to start from; no file path of the server in anything the page shows; one check
downloaded as a self-contained HTML report. The service is the installed ``ioa-check serve``
as a process on loopback.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser import Browser, chromium, free_port, require_browser, served, serving_the_page
from support import CONFORMANCE, IOA_CHECK, ROOT

require_browser(module=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402
from test_browser_page import AT, WAIT, check_in_page  # noqa: E402

needs_shared = pytest.mark.skipif(not (CONFORMANCE / "draft-6.2-envelope").exists(),
                                  reason="../shared (the conformance cases) is not present")
ACCEPTED_MAPPING = CONFORMANCE / "draft-12.1-accepted-mapping"
# An absolute POSIX path to a file, standing on its own (not the path part of an IRI).
ABSOLUTE_PATH = re.compile(r"(?<![\w:/.])/(?:[^\s'\"/]+/)+[^\s'\"/]+\.json\w*")


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving_the_page(tmp_path_factory.mktemp("serve")) as base:
        yield base


@pytest.fixture(scope="module")
def offering(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A service offered a capability and two artifacts by absolute paths (one of them
    malformed, so that its exclusion names its file): its base URL and the folder."""
    if not ACCEPTED_MAPPING.exists():
        pytest.skip("../shared (the conformance cases) is not present")
    folder = tmp_path_factory.mktemp("offered-files")
    for name in ("provider.jsonld", "align0.json"):
        shutil.copy(ACCEPTED_MAPPING / name, folder / name)
    (folder / "malformed-artifact.json").write_text('{"artifactId": 5}')
    port = free_port()
    with served([IOA_CHECK, "serve", "--profile", "cs-translation", "--port", str(port),
                 "--capability", str(folder / "provider.jsonld"),
                 "--alignment", str(folder / "align0.json"),
                 "--alignment", str(folder / "malformed-artifact.json")],
                port, folder) as base:
        yield base, folder


def envelope_of(case: str) -> str:
    return (CONFORMANCE / case / "envelope.jsonld").read_text()


def verdict_becomes(browser: Browser, wanted: str) -> None:
    WebDriverWait(browser.driver, WAIT).until(
        lambda d: d.find_element(By.ID, "verdict").get_attribute("data-verdict") == wanted)


@needs_shared
def test_after_check_the_result_heading_is_in_view_and_focused(browser: Browser,
                                                               service: str) -> None:
    browser.driver.set_window_size(1024, 768)
    assert check_in_page(browser, service, envelope_of("draft-12.3-law-sense")) == "incompatible"
    driver = browser.driver
    heading = driver.find_element(By.ID, "result-heading")
    # Keyboard and screen-reader users land on the result: its heading has the focus...
    assert driver.switch_to.active_element == heading
    assert heading.get_attribute("tabindex") == "-1"
    # ... and everyone sees it: the heading is within the viewport, not below the form.
    top, bottom, height = driver.execute_script(
        "var r = arguments[0].getBoundingClientRect();"
        "return [r.top, r.bottom, window.innerHeight];", heading)
    assert top >= -1 and bottom <= height, (top, bottom, height)  # -1: sub-pixel rounding
    # The verdict itself is announced by a live region.
    outcome = driver.find_element(By.ID, "outcome")
    assert outcome.get_attribute("aria-live") == "polite"
    assert "incompatible" in outcome.text
    assert browser.console_errors() == []


# How many lines a cell's text takes: the distinct tops of its text's line boxes.
LINES_OF = """
var range = document.createRange();
range.selectNodeContents(arguments[0]);
var tops = {};
Array.prototype.forEach.call(range.getClientRects(), function (r) {
  if (r.width > 0) { tops[Math.round(r.top)] = true; }
});
var line = parseFloat(getComputedStyle(arguments[0]).lineHeight);
return [Object.keys(tops).length, range.getBoundingClientRect().height, line];
"""


@needs_shared
@pytest.mark.parametrize("case", ["draft-12.3-law-sense", "invalid-two-missing-members",
                                  "invalid-protected-redefinition"])
def test_each_reason_code_reads_on_one_line_at_1024_pixels(browser: Browser, service: str,
                                                           case: str) -> None:
    browser.driver.set_window_size(1024, 768)
    check_in_page(browser, service, envelope_of(case))
    cells = browser.driver.find_elements(By.CSS_SELECTOR, "#reasons tr.reason td.code")
    assert cells
    for cell in cells:
        lines, height, line = browser.driver.execute_script(LINES_OF, cell)
        assert lines == 1 and height <= line * 1.2, (cell.text, lines, height, line)
    # A path breaks only at its separators: no line of a Path cell ends inside a name.
    for cell in browser.driver.find_elements(By.CSS_SELECTOR, "#reasons tr.reason td.path"):
        assert cell.find_elements(By.TAG_NAME, "wbr") or "/" not in cell.text.strip("/")
    browser.screenshot(f"reasons-{case}")
    assert browser.console_errors() == []


@needs_shared
def test_a_remedy_applied_with_a_click_edits_the_envelope_and_checks_again(
        browser: Browser, service: str) -> None:
    """The ontology version the profile does not accept is replaced by the one it does."""
    assert check_in_page(browser, service, envelope_of("version-not-accepted")) == "indeterminate"
    driver = browser.driver
    remedy = driver.find_element(By.CSS_SELECTOR,
                                 "#remedies li.remedy[data-action=use-accepted-version]")
    remedy.find_element(By.CSS_SELECTOR, "button.apply").click()
    verdict_becomes(browser, "compatible")
    edited = json.loads(driver.find_element(By.ID, "envelope").get_attribute("value") or "")
    assert (edited["ontologyId"], edited["ontologyVersion"]) == (
        "https://example.org/onto/agent-core", "1.0")
    # Everything else of the envelope is as it was sent.
    sent = json.loads(envelope_of("version-not-accepted"))
    assert {k: v for k, v in edited.items() if k != "ontologyVersion"} == {
        k: v for k, v in sent.items() if k != "ontologyVersion"}
    # The re-check brought its result into view again.
    assert driver.switch_to.active_element == driver.find_element(By.ID, "result-heading")
    assert browser.console_errors() == []


def test_a_parameter_to_supply_is_set_with_a_click(browser: Browser,
                                                   offering: tuple[str, Path]) -> None:
    """The 12.1 mapping's conditions name sourceLang and targetLang: each remedy's click sets
    the task parameter and checks again, and with both the mapping is established."""
    base, _ = offering
    envelope = (ACCEPTED_MAPPING / "envelope.jsonld").read_text()
    assert check_in_page(browser, base, envelope) == "indeterminate"
    driver = browser.driver
    for name in ("sourceLang", "targetLang"):
        item = next(li for li in driver.find_elements(
            By.CSS_SELECTOR, "#remedies li.remedy[data-action=supply-parameter]")
            if f"Set {name} = " in li.text)
        item.find_element(By.CSS_SELECTOR, "button.apply").click()

        def set_(d: Any, wanted: str = name) -> bool:
            return any(row.get_attribute("value") == wanted
                       for row in d.find_elements(By.CSS_SELECTOR, "#params .param-key"))

        WebDriverWait(driver, WAIT).until(set_)
    verdict_becomes(browser, "compatible")
    keys = [k.get_attribute("value") for k in driver.find_elements(
        By.CSS_SELECTOR, "#params .param-key")]
    assert sorted(k for k in keys if k) == ["sourceLang", "targetLang"]
    assert browser.console_errors() == []


def test_the_sample_envelope_fills_the_textarea_and_checks_compatible(
        browser: Browser, service: str) -> None:
    driver = browser.open(service + "/")
    driver.find_element(By.ID, "sample").click()
    text = driver.find_element(By.ID, "envelope").get_attribute("value") or ""
    # The draft's 6.2 example, from the package (the page names no file of the server).
    assert json.loads(text) == json.loads((ROOT / "examples" / "envelope-6.2.jsonld").read_text())
    assert driver.switch_to.active_element == driver.find_element(By.ID, "envelope")
    instant = driver.find_element(By.ID, "at")
    instant.clear()
    instant.send_keys(AT)
    driver.find_element(By.ID, "submit").click()
    verdict_becomes(browser, "compatible")
    assert not ABSOLUTE_PATH.search(driver.find_element(By.TAG_NAME, "body").text)
    assert browser.console_errors() == []


def test_no_file_path_of_the_server_is_shown(browser: Browser,
                                            offering: tuple[str, Path]) -> None:
    """The answer names the offered files by their absolute paths (a malformed artifact's
    exclusion, the artifacts' sources): the page shows their names only."""
    base, folder = offering
    envelope = (ACCEPTED_MAPPING / "envelope.jsonld").read_text()
    assert check_in_page(browser, base, envelope) == "indeterminate"
    driver = browser.driver
    driver.find_element(By.CSS_SELECTOR, "#raw summary").click()  # the raw JSON shown too
    shown = driver.find_element(By.TAG_NAME, "body").text
    # The check did name the files (so that the assertion below has something to find)...
    assert "malformed-artifact.json" in shown
    # ... and the page shows no absolute path, nor the folder they are in.
    assert not ABSOLUTE_PATH.search(shown), ABSOLUTE_PATH.findall(shown)
    assert str(folder) not in shown
    # The JSON Pointers of the reasons are kept as they are.
    assert all(not ABSOLUTE_PATH.search(cell.text) for cell in driver.find_elements(
        By.CSS_SELECTOR, "#reasons td.path"))
    browser.screenshot("no-server-paths")
    assert browser.console_errors() == []


def test_one_check_downloads_as_a_self_contained_html_report(service: str,
                                                             tmp_path: Path) -> None:
    """The report holds the verdict, each reason and the answer, escaped; it runs and fetches
    nothing."""
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    with chromium(tmp_path, downloads=downloads) as browser:
        # A key that is markup: the report must show it as text.
        envelope = '{"@context": {}, "<b>x</b>": 1}'
        assert check_in_page(browser, service, envelope) == "invalid"
        codes = [row.get_attribute("data-code") for row in browser.driver.find_elements(
            By.CSS_SELECTOR, "#reasons tr.reason")]
        browser.driver.find_element(By.ID, "download-report").click()
        report = downloads / "ioa-check-report.html"
        WebDriverWait(browser.driver, WAIT).until(lambda _: report.exists() and not list(
            downloads.glob("*.crdownload")))
        assert browser.console_errors() == []
    html = report.read_text(encoding="utf-8")
    assert html.startswith("<!doctype html>")
    assert '<strong id="verdict">invalid</strong>' in html
    for code in codes:
        assert f"<code>{code}</code>" in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html
    # Self-contained: no script, nothing fetched from anywhere.
    assert "<script" not in html.lower()
    assert not re.search(r"""(src|href)\s*=""", html, re.I)
    assert "default-src 'none'" in html
