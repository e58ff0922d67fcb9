"""The HTML audit report in a real browser (headless Chromium, tests/browser.py): its totals
are the JSON summary's, the filter shows only the rows of the code typed, hostile content
runs nothing and reads as it is, the page works without JavaScript, and its console stays
free of errors. Screenshots go to each test's tmp_path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from browser import Browser, chromium, free_port, require_browser, served, static_server
from test_audit_html import HOSTILE_FILE, audit, json_results, json_summary, write_corpus

# Where no browser can be started the module skips, saying why (and fails in CI); Selenium
# is imported only past that.
require_browser(module=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

WAIT = 30  # seconds: a bound that only catches a hang

# The lowest contrast ratio (WCAG 2) of any text of the page against the background it stands
# on: every element with text of its own, its colour against the first opaque background of
# it or an ancestor.
LOWEST_CONTRAST = """
function channel(c) {
  c /= 255;
  return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
}
function luminance(rgb) {
  return 0.2126 * channel(rgb[0]) + 0.7152 * channel(rgb[1]) + 0.0722 * channel(rgb[2]);
}
function parse(colour) {
  var m = colour.match(/[\\d.]+/g).map(Number);
  return m.length > 3 ? m : m.concat([1]);
}
function background(element) {
  for (var e = element; e; e = e.parentElement) {
    var rgba = parse(getComputedStyle(e).backgroundColor);
    if (rgba[3] === 1) { return rgba; }
  }
  return [255, 255, 255, 1];
}
var lowest = [99, ""];
document.querySelectorAll("body *").forEach(function (e) {
  if (e.closest("svg") || !e.getClientRects().length) { return; }
  var own = Array.prototype.some.call(e.childNodes, function (n) {
    return n.nodeType === 3 && n.textContent.trim();
  });
  if (!own) { return; }
  var a = luminance(parse(getComputedStyle(e).color)), b = luminance(background(e));
  var ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  if (ratio < lowest[0]) {
    lowest = [ratio, e.tagName + "." + e.className + ": " + e.textContent.slice(0, 40)];
  }
});
return lowest;
"""


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The report of a generated corpus with hostile registrations, and the json summary of
    the same audit."""
    corpus = write_corpus(tmp_path_factory.mktemp("browser-corpus"))
    proc = audit(corpus, "html", "--output", "report.html")
    assert proc.returncode == 1, proc.stderr.decode()
    return corpus, json_summary(corpus)["summary"]


def totals(driver: Any) -> dict[str, int]:
    """The totals as a person reads them (the text, thousands separated), checked against
    their data-count."""
    read = {}
    for ident in ("total", "status-valid", "status-invalid", "status-indeterminate",
                  "conflict-count"):
        element = driver.find_element(By.ID, ident)
        assert element.is_displayed()
        number = int(element.text.replace(",", ""))
        assert number == int(element.get_attribute("data-count"))
        read[ident] = number
    return read


def visible_rows(driver: Any) -> list[Any]:
    return [row for row in driver.find_elements(By.CSS_SELECTOR, "#findings tbody tr")
            if row.is_displayed()]


def test_the_report_reads_its_totals_and_filters_by_code(
        browser: Browser, made: tuple[Path, dict[str, Any]]) -> None:
    corpus, summary = made
    driver = browser.open((corpus / "report.html").as_uri())
    assert driver.title.startswith(f"Audit: {summary['total']:,} registrations")
    assert totals(driver) == {
        "total": summary["total"], "status-valid": summary["status"]["valid"],
        "status-invalid": summary["status"]["invalid"],
        "status-indeterminate": summary["status"]["indeterminate"],
        "conflict-count": summary["conflicts"]}
    embedded = driver.execute_script(
        "return JSON.parse(document.getElementById('summary-data').textContent)")
    assert embedded == {"summary": summary}
    assert driver.find_element(By.ID, "codes-chart").is_displayed()
    ratio, where = driver.execute_script(LOWEST_CONTRAST)
    assert ratio >= 7, where  # WCAG's enhanced contrast (AAA) for all of the page's text
    browser.screenshot("report")

    # The filters appear with the script; every listed row shows until one is used.
    listed = driver.find_elements(By.CSS_SELECTOR, "#findings tbody tr")
    shown = driver.find_element(By.ID, "shown-count")
    assert len(visible_rows(driver)) == len(listed) > 100
    assert shown.text == f"Showing {len(listed):,} of {len(listed):,} listed registrations."

    results = json_results(corpus)
    code = "registration.media-type"
    carrying = [r for r in results if code in {x["code"] for x in r["reasons"]}]
    assert 0 < len(carrying) < len(listed)
    # Reached from the keyboard, as a person without a mouse reaches it.
    field = driver.find_element(By.ID, "filter")
    driver.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
    for _ in range(12):
        if driver.switch_to.active_element == field:
            break
        driver.switch_to.active_element.send_keys(Keys.TAB)
    assert driver.switch_to.active_element == field
    assert driver.find_element(By.CSS_SELECTOR, "label[for=filter]").text.startswith("Filter by code")
    field.send_keys(code)
    WebDriverWait(driver, WAIT).until(lambda d: len(visible_rows(d)) == len(carrying))
    assert all(code in row.get_attribute("data-codes").split() for row in visible_rows(driver))
    assert shown.text == f"Showing {len(carrying):,} of {len(listed):,} listed registrations."
    browser.screenshot("filtered")

    # A status and the text together; then a text nothing matches.
    Select(driver.find_element(By.ID, "status-filter")).select_by_value("indeterminate")
    WebDriverWait(driver, WAIT).until(lambda d: all(
        row.get_attribute("data-status") == "indeterminate" for row in visible_rows(d)))
    assert len(visible_rows(driver)) == len([r for r in carrying if r["status"] == "indeterminate"])
    field.clear()
    field.send_keys("no-such-code")
    WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.ID, "no-match").is_displayed())
    assert visible_rows(driver) == []
    assert browser.console_errors() == []


def test_hostile_content_runs_nothing_and_reads_as_it_is(
        browser: Browser, made: tuple[Path, dict[str, Any]]) -> None:
    corpus, _ = made
    driver = browser.open((corpus / "report.html").as_uri())
    # None of the registrations' scripts or handlers ran (each would set window.pwned), the
    # page's scripts are its own two, and no element came from the input.
    assert driver.execute_script("return typeof window.pwned") == "undefined"
    assert driver.execute_script("return document.scripts.length") == 2
    assert driver.find_elements(By.CSS_SELECTOR, "img, iframe, object, embed, b") == []
    field = driver.find_element(By.ID, "filter")
    field.send_keys(HOSTILE_FILE)
    WebDriverWait(driver, WAIT).until(lambda d: 0 < len(visible_rows(d)) < 10)
    rows = visible_rows(driver)
    assert [row.find_elements(By.TAG_NAME, "td")[1].text for row in rows] == [
        "./" + HOSTILE_FILE] * len(rows)
    ids = [row.find_element(By.TAG_NAME, "th").text for row in rows]
    assert ids[:3] == ["https://e.org/cap<script>window.pwned=1</script>",
                       "https://e.org/<U+202E>exe.txt",
                       "https://example.org/onto/cs#Cap\"'&amp;<b>x</b>"]
    # The override is shown, not obeyed: the text after it reads left to right.
    override = rows[1].find_element(By.CSS_SELECTOR, "th .cc")
    assert override.text == "<U+202E>"
    assert "'<script>window.pwned=4</script>' is not mapped" in rows[3].text
    browser.full_page_screenshot("hostile")
    assert driver.execute_script("return typeof window.pwned") == "undefined"
    assert browser.console_errors() == []


def test_without_javascript_every_listed_row_shows(
        tmp_path: Path, made: tuple[Path, dict[str, Any]]) -> None:
    corpus, summary = made
    with chromium(tmp_path, javascript=False) as browser:
        driver = browser.open((corpus / "report.html").as_uri())
        assert totals(driver)["total"] == summary["total"]
        assert not driver.find_element(By.ID, "filters").is_displayed()
        assert driver.find_element(By.ID, "shown-count").get_attribute("textContent") == ""
        rows = driver.find_elements(By.CSS_SELECTOR, "#findings tbody tr")
        assert rows and len(visible_rows(driver)) == len(rows)
        browser.screenshot("no-javascript")
        assert browser.console_errors() == []


def test_the_report_served_over_http_reads_the_same(
        browser: Browser, made: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    """The served() helper as a page of a server would use it, over Python's file server."""
    corpus, summary = made
    port = free_port()
    with served(static_server(corpus, port), port, tmp_path, ready="/") as base:
        driver = browser.open(f"{base}/report.html")
        assert totals(driver)["status-invalid"] == summary["status"]["invalid"]
        assert json.loads(driver.find_element(By.ID, "summary-data").get_attribute(
            "textContent")) == {"summary": summary}
        browser.screenshot("served")
        assert browser.console_errors() == []
    assert (tmp_path / "server.log").exists()
