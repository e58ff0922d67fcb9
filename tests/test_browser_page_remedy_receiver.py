"""Review (h60): the service's page gives the receiver's fix for what the receiver names.

An artifact the receiver offers by ``--alignment URL`` that cannot be fetched when a check
needs it is the receiver's to fix (tests/test_review_remedy_receiver.py): its remedy is a
``retry`` by the receiver at that URL, and the text report's fix says what the receiver can
do. The page (headless Chromium, tests/browser.py) shows the same fix in the reason's Fix
cell and in the downloaded report, not the sender's "inline the context"; a URL the sender
names in the same envelope (its ``alignmentRef``) keeps the sender's fix. The service is the
installed ``ioa-check serve`` as a process on loopback; nothing is fetched from the network
(a refused connection on loopback port 9, and a loopback server answering 404).
"""

from __future__ import annotations

import html
import json
import re
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx

from ioa_semantic._codes import fix_for

from browser import Browser, chromium, free_port, require_browser, served
from retrieval_servers import LoopbackServer
from support import ACCEPTED_MAPPING, IOA_CHECK

require_browser(module=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402
from test_browser_page import AT, WAIT, check_in_page  # noqa: E402

# Nothing answers there: every fetch is a refused connection, retrieval.failed at once.
REFUSING = "https://127.0.0.1:9"
PARAMS = {"sourceLang": "zh", "targetLang": "en"}
# What a fix for the sender's contexts says; never said of the receiver's own settings.
SENDERS_FIX = "inline the context"
# One row of the downloaded report's reasons: code, severity, section, path, message, fix.
REPORT_ROW = re.compile(r"<tr><td><code>([^<]*)</code></td><td>[^<]*</td><td>[^<]*</td>"
                        r"<td><code>([^<]*)</code></td><td>[^<]*</td><td>([^<]*)</td></tr>")


def serve(folder: Path, alignment: str, origin: str | None) -> AbstractContextManager[str]:
    """``ioa-check serve`` offering the 12.1 provider and ``alignment`` by URL, retrieval
    allowed from ``origin`` on loopback (None: from nowhere)."""
    port = free_port()
    allowed = ["--allow-remote", origin, "--allow-private-addresses"] if origin else []
    return served([IOA_CHECK, "serve", "--profile", "cs-translation", "--port", str(port),
                   "--threads", "1", "--capability", str(ACCEPTED_MAPPING / "provider.jsonld"),
                   "--alignment", alignment, *allowed], port, folder)


def envelope(alignment_ref: str | None = None) -> str:
    document = json.loads((ACCEPTED_MAPPING / "envelope.jsonld").read_text())
    if alignment_ref:
        document["@context"]["alignmentRef"] = {"@id": "ioa:alignmentRef", "@type": "@id"}
        document["alignmentRef"] = alignment_ref
    return json.dumps(document)


def answer_of(base: str, text: str) -> dict[str, Any]:
    response = httpx.post(f"{base}/v1/check", params={"at": AT, "param": [
        f"{k}={v}" for k, v in PARAMS.items()]}, content=text.encode(),
        headers={"content-type": "application/ld+json"}, timeout=WAIT)
    assert response.status_code == 200
    result: dict[str, Any] = response.json()
    return result


def fix_cells(browser: Browser, code: str) -> dict[str, str]:
    """The Fix cell of each reason of ``code`` the page shows, by the reason's path."""
    rows = browser.driver.find_elements(By.CSS_SELECTOR, f'#reasons tr.reason[data-code="{code}"]')
    return {row.find_element(By.CSS_SELECTOR, "td.path").text:
            row.find_element(By.CSS_SELECTOR, "td.fix").text for row in rows}


def test_an_offered_artifact_url_that_fails_has_the_receivers_fix_in_the_page(
        tmp_path: Path) -> None:
    offered, referenced = f"{REFUSING}/align.json", f"{REFUSING}/ref.json"
    text = envelope(alignment_ref=referenced)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    with serve(tmp_path, offered, REFUSING) as base, chromium(
            tmp_path, downloads=downloads) as browser:
        answer = answer_of(base, text)
        # What the answer ties: a retry by the receiver at the URL it offers, one by the
        # sender at the URL its alignmentRef names, each answering a retrieval.failed there.
        assert answer["verdict"] == "indeterminate"
        assert sorted(r["path"] for r in answer["reasons"] if r["code"] == "retrieval.failed"
                      ) == [offered, referenced]
        assert [r for r in answer["remedies"] if r["action"] == "retry"] == [
            {"action": "retry", "by": "receiver", "codes": ["retrieval.failed"], "url": offered},
            {"action": "retry", "by": "sender", "codes": ["retrieval.failed"], "url": referenced}]

        assert check_in_page(browser, base, text, params=PARAMS) == "indeterminate"
        receivers = fix_for("retrieval.failed", receivers=True)
        senders = fix_for("retrieval.failed")
        assert SENDERS_FIX not in receivers and SENDERS_FIX in senders
        # The page says what the text report says: the receiver's fix for its own URL, the
        # sender's for the sender's.
        assert fix_cells(browser, "retrieval.failed") == {offered: receivers,
                                                          referenced: senders}
        browser.screenshot("receivers-fix")

        browser.driver.find_element(By.ID, "download-report").click()
        report = downloads / "ioa-check-report.html"
        WebDriverWait(browser.driver, WAIT).until(lambda _: report.exists() and not list(
            downloads.glob("*.crdownload")))
        assert browser.console_errors() == []
    rows = {html.unescape(path): html.unescape(fix) for code, path, fix in
            REPORT_ROW.findall(report.read_text(encoding="utf-8")) if code == "retrieval.failed"}
    assert rows == {offered: receivers, referenced: senders}


def test_an_offered_artifact_url_the_server_refuses_has_the_receivers_fix_in_the_page(
        tmp_path: Path) -> None:
    with LoopbackServer({}) as http:  # every path is 404
        offered = http.url("/align.json", host="127.0.0.1")
        with serve(tmp_path, offered, http.origin("127.0.0.1")) as base, chromium(
                tmp_path) as browser:
            text = envelope()
            assert [r for r in answer_of(base, text)["remedies"] if r["action"] == "retry"] == [
                {"action": "retry", "by": "receiver", "codes": ["retrieval.http-status"],
                 "url": offered}]
            assert check_in_page(browser, base, text, params=PARAMS) == "indeterminate"
            fix = fix_for("retrieval.http-status", receivers=True)
            assert SENDERS_FIX not in fix
            assert fix_cells(browser, "retrieval.http-status") == {offered: fix}
            assert browser.console_errors() == []


def test_an_offered_artifact_url_retrieval_refuses_has_the_receivers_fix_in_the_page(
        tmp_path: Path) -> None:
    """Retrieval allowed from nowhere: the offered URL is refused by the policy, whose remedy
    (allow-retrieval, the receiver's whoever named the URL) does not tell whose URL it is;
    the page knows the URLs the service offers. A sender's alignmentRef to another URL,
    refused alike, keeps the sender's fix."""
    offered, referenced = f"{REFUSING}/align.json", f"{REFUSING}/ref.json"
    text = envelope(alignment_ref=referenced)
    with serve(tmp_path, offered, None) as base, chromium(tmp_path) as browser:
        refused = [r for r in answer_of(base, text)["reasons"] if r["path"] in (offered,
                                                                                referenced)]
        codes = {r["code"] for r in refused}
        assert len(refused) == 2 and len(codes) == 1, refused
        (code,) = codes
        assert code.startswith("retrieval.")
        assert check_in_page(browser, base, text, params=PARAMS) == "indeterminate"
        receivers, senders = fix_for(code, receivers=True), fix_for(code)
        assert receivers != senders
        assert fix_cells(browser, code) == {offered: receivers, referenced: senders}
        assert browser.console_errors() == []
