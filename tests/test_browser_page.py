"""The service's page in a real browser (headless Chromium, tests/browser.py): a person pastes
an envelope, submits, and reads the verdict, each reason and each remedy, the same data as
the JSON answer; by keyboard alone too; with no console errors. Screenshots go to each
test's tmp_path. The service is the installed ``ioa-check serve`` as a process on loopback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from test_browser_report import LOWEST_CONTRAST

from browser import Browser, free_port, require_browser, served, serving_the_page
from support import CONFORMANCE, IOA_CHECK

require_browser(module=True)

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

WAIT = 30  # seconds: a bound that only catches a hang
AT = "2026-06-01T00:00:00Z"
CASES = CONFORMANCE
needs_shared = pytest.mark.skipif(not (CASES / "draft-6.2-envelope").exists(),
                                  reason="../shared (the conformance cases) is not present")


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving_the_page(tmp_path_factory.mktemp("serve")) as base:
        yield base


def check_in_page(browser: Browser, base: str, envelope: str, at: str = AT,
                  params: dict[str, str] | None = None) -> str:
    """The page opened, the envelope pasted, the task ``params`` set in their rows, the
    instant set and the form sent: the verdict the banner shows, once it shows one."""
    driver = browser.open(base + "/")
    area = driver.find_element(By.ID, "envelope")
    area.clear()
    # Pasting a large text key by key is slow: the value is set as a paste would set it.
    driver.execute_script("arguments[0].value = arguments[1];"
                          "arguments[0].dispatchEvent(new Event('input'));", area, envelope)
    for n, (name, value) in enumerate((params or {}).items()):
        if n:
            driver.find_element(By.ID, "add-param").click()
        driver.find_element(By.ID, f"param-key-{n}").send_keys(name)
        driver.find_element(By.ID, f"param-value-{n}").send_keys(value)
    instant = driver.find_element(By.ID, "at")
    instant.clear()
    instant.send_keys(at)
    driver.find_element(By.ID, "submit").click()
    WebDriverWait(driver, WAIT).until(
        lambda d: d.find_element(By.ID, "verdict").get_attribute("data-verdict"))
    return str(driver.find_element(By.ID, "verdict").text)


def answer_of(base: str, envelope: str) -> dict[str, object]:
    response = httpx.post(f"{base}/v1/check", params={"at": AT}, content=envelope.encode(),
                          headers={"content-type": "application/ld+json"}, timeout=WAIT)
    assert response.status_code == 200
    result: dict[str, object] = response.json()
    return result


@needs_shared
def test_the_62_envelope_reads_compatible(browser: Browser, service: str) -> None:
    envelope = (CASES / "draft-6.2-envelope" / "envelope.jsonld").read_text()
    assert check_in_page(browser, service, envelope) == "compatible"
    driver = browser.driver
    # The same data as the JSON: no reason, and the raw answer is the service's own.
    # (the raw answer sits in a closed disclosure: its text content, not its rendered text)
    shown = json.loads(driver.find_element(By.ID, "raw-json").get_attribute("textContent") or "")
    assert shown == answer_of(service, envelope)
    assert driver.find_elements(By.CSS_SELECTOR, "#reasons tr.reason") == []
    browser.screenshot("compatible")
    assert browser.console_errors() == []


@needs_shared
def test_the_123_envelope_reads_incompatible_with_its_reason_and_remedy(
        browser: Browser, service: str) -> None:
    envelope = (CASES / "draft-12.3-law-sense" / "envelope.jsonld").read_text()
    assert check_in_page(browser, service, envelope) == "incompatible"
    driver = browser.driver
    answer = answer_of(service, envelope)
    rows = driver.find_elements(By.CSS_SELECTOR, "#reasons tr.reason")
    reasons = answer["reasons"]
    assert isinstance(reasons, list)
    assert [r.get_attribute("data-code") for r in rows] == [r["code"] for r in reasons]
    first = rows[0]
    assert first.find_element(By.CSS_SELECTOR, ".code").text.startswith("domain.")
    assert first.find_element(By.CSS_SELECTOR, ".section").text == reasons[0]["section"]
    assert first.find_element(By.CSS_SELECTOR, ".fix").text  # what to do about it, shown
    remedies = answer["remedies"]
    assert isinstance(remedies, list)
    assert [li.get_attribute("data-action") for li in driver.find_elements(
        By.CSS_SELECTOR, "#remedies li.remedy")] == [r["action"] for r in remedies]
    # WCAG 2 AA (4.5:1), which docs/tutorials/service.md promises, for every text of the page with a
    # result on it: the banner, the reasons' table, the remedies.
    ratio, where = driver.execute_script(LOWEST_CONTRAST)
    assert ratio >= 4.5, where
    browser.screenshot("incompatible")
    assert browser.console_errors() == []


@needs_shared
def test_a_keyboard_alone_checks_an_envelope(browser: Browser, service: str) -> None:
    """Tab to each control and send the form with Enter on the button: no mouse."""
    envelope = (CASES / "draft-6.2-envelope" / "envelope.jsonld").read_text()
    driver = browser.open(service + "/")
    driver.find_element(By.ID, "envelope").click()  # focus only; the rest is keys
    driver.switch_to.active_element.send_keys(Keys.CONTROL, "a")
    driver.execute_script("document.activeElement.value = arguments[0];", envelope)
    at = driver.find_element(By.ID, "at")
    for _ in range(40):  # to the instant, by Tab (keys to the page, as a keyboard sends them)
        if driver.switch_to.active_element == at:
            break
        ActionChains(driver).send_keys(Keys.TAB).perform()
    assert driver.switch_to.active_element == at
    ActionChains(driver).key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL).send_keys(
        AT).perform()
    submit = driver.find_element(By.ID, "submit")
    for _ in range(40):
        if driver.switch_to.active_element == submit:
            break
        ActionChains(driver).send_keys(Keys.TAB).perform()
    assert driver.switch_to.active_element == submit
    ActionChains(driver).send_keys(Keys.ENTER).perform()
    WebDriverWait(driver, WAIT).until(
        lambda d: d.find_element(By.ID, "verdict").get_attribute("data-verdict"))
    assert driver.find_element(By.ID, "verdict").text == "compatible"
    assert browser.console_errors() == []


def test_malformed_input_reads_invalid_with_the_field(browser: Browser, service: str,
                                                      tmp_path: Path) -> None:
    assert check_in_page(browser, service, '{"@context": {}, "id": 1}') == "invalid"
    rows = browser.driver.find_elements(By.CSS_SELECTOR, "#reasons tr.reason")
    assert rows and all(r.find_element(By.CSS_SELECTOR, ".path").text is not None for r in rows)
    browser.screenshot("invalid")
    assert browser.console_errors() == []


def test_the_page_notes_an_offered_artifacts_validity_ending_near_the_instant(
        browser: Browser, tmp_path: Path) -> None:
    """cs-doc-v1 is valid until 2026-12-31: at 2026-12-15 the page says so before the check;
    at 2026-06-01 it says nothing."""
    port = free_port()
    with served([IOA_CHECK, "serve", "--profile", "cs-translation", "--alignment", "cs-doc-v1",
                 "--port", str(port)], port, tmp_path) as base:
        driver = browser.open(base + "/")
        note = driver.find_element(By.ID, "expiry-note")
        at = driver.find_element(By.ID, "at")
        for instant, shown in (("2026-06-01T00:00:00Z", False), ("2026-12-15T00:00:00Z", True)):
            at.clear()
            at.send_keys(instant)

            def settled(_: object, wanted: bool = shown) -> bool:
                return bool(note.is_displayed()) is wanted

            WebDriverWait(driver, WAIT).until(settled)
        assert "2026-12-31" in note.text
        browser.screenshot("expiry-note")
        assert browser.console_errors() == []
