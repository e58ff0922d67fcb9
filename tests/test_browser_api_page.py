"""The interactive API page (``GET /docs``) in a real browser (headless Chromium,
tests/browser.py): it renders every operation of the service's OpenAPI document, loads
nothing from another origin, and logs no error (a Content Security Policy violation would be
one). The service is the installed ``ioa-check serve`` as a process on loopback.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from browser import Browser, require_browser, serving_the_page

require_browser(module=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

WAIT = 60  # seconds: a bound that only catches a hang


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving_the_page(tmp_path_factory.mktemp("serve-api")) as base:
        yield base


def test_the_api_page_renders_every_operation_from_this_server_only(
        browser: Browser, service: str) -> None:
    document = httpx.get(f"{service}/openapi.json", timeout=WAIT).json()
    expected = {(method.upper(), path) for path, item in document["paths"].items()
                for method in item}
    driver = browser.open(service + "/docs")
    WebDriverWait(driver, WAIT).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, ".opblock")) >= len(expected))
    shown = {(block.find_element(By.CSS_SELECTOR, ".opblock-summary-method").text.strip(),
              block.find_element(By.CSS_SELECTOR, ".opblock-summary-path").get_attribute(
                  "data-path"))
             for block in driver.find_elements(By.CSS_SELECTOR, ".opblock")}
    assert shown == expected
    assert document["info"]["title"] in driver.find_element(By.CSS_SELECTOR, ".info").text
    # An operation opens, with its responses: the check's 415 is problem details.
    check = driver.find_element(By.ID, "operations-default-check")
    check.find_element(By.CSS_SELECTOR, ".opblock-summary").click()
    WebDriverWait(driver, WAIT).until(
        lambda d: "application/problem+json" in check.text)
    resources = driver.execute_script(
        "return performance.getEntriesByType('resource').map(function (e) { return e.name; })")
    assert resources and all(url.startswith(service + "/") for url in resources), resources
    assert f"{service}/openapi.json" in resources
    browser.screenshot("api-page")
    assert browser.console_errors() == []
