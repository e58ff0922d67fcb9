"""The HTML impact report in a real browser (headless Chromium, tests/browser.py): the
verdict filters and the text filter show only the flips asked for, hostile content from the
log runs nothing, and the console stays free of errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from browser import Browser, require_browser
from test_impact_reports import impact, make_corpus

require_browser(module=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

WAIT = 30  # seconds: a bound that only catches a hang


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = make_corpus(tmp_path_factory.mktemp("browser-impact"))
    proc = impact(corpus, "html")
    assert proc.returncode == 1, proc.stderr.decode()
    (corpus / "impact.html").write_bytes(proc.stdout)
    return corpus / "impact.html"


def shown(driver: Any) -> list[Any]:
    return [row for row in driver.find_elements(By.CSS_SELECTOR, "#flips tbody tr")
            if row.is_displayed()]


def test_the_filters_show_the_flips_asked_for(browser: Browser, page: Path) -> None:
    driver = browser.open(page.as_uri())
    assert driver.find_element(By.ID, "filters").is_displayed()
    assert len(shown(driver)) == 3
    Select(driver.find_element(By.ID, "before-filter")).select_by_value("indeterminate")
    WebDriverWait(driver, WAIT).until(lambda d: len(shown(d)) == 2)
    Select(driver.find_element(By.ID, "after-filter")).select_by_value("compatible")
    WebDriverWait(driver, WAIT).until(lambda d: len(shown(d)) == 1)
    assert driver.find_element(By.ID, "shown-count").text == "Showing 1 of 3 listed flips."
    Select(driver.find_element(By.ID, "before-filter")).select_by_value("")
    Select(driver.find_element(By.ID, "after-filter")).select_by_value("")
    driver.find_element(By.ID, "filter").send_keys("no-accepted-mapping")
    WebDriverWait(driver, WAIT).until(lambda d: len(shown(d)) == 1)
    (row,) = shown(driver)
    assert row.get_attribute("data-after") == "compatible"
    driver.find_element(By.ID, "filter").send_keys("nothing of the kind")
    WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.ID, "no-match").is_displayed())
    assert driver.execute_script("return typeof window.pwned") == "undefined"
    assert driver.execute_script("return document.scripts.length") == 2
    assert browser.console_errors() == []
