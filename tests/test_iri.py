"""The one IRI judge (RFC 3987) against the RFC's ABNF written out as one expression.

``_iri.iri_defect`` cuts an IRI where the RFC cuts it and matches each part in one pass; the
tests' ``fuzzing.is_iri`` is the ``IRI`` production transcribed rule by rule. Hypothesis
holds the two to the same answer.
"""

from __future__ import annotations

import pytest
from fuzzing import is_iri as abnf_says_iri
from hypothesis import given, settings
from hypothesis import strategies as st
from operations import growth, operations

from ioa_semantic._iri import _PLAIN_ASCII, _defect, iri_defect, iri_scheme, is_absolute_iri

PIECES = ["http", "https", "urn", "x+y", "1a", ":", "//", "/", "?", "#", "@", "[", "]", "::1",
          "v1.x", "%", "%41", "%4", "%zz", "a", "Z", "0", "80", ".", "-", "_", "~", "!", "'",
          "(", ")", "*", "+", ",", ";", "=", " ", "<", ">", '"', "{", "}", "|", "\\", "^", "`",
          "\x00", "\x1f", "\x7f", "\x85", "\u00a0", "é", "\ud7ff", "\ue000", "\uf8ff", "\uf900",
          "\ufdd0", "\ufdf0", "\ufffe", "\U00010000", "\U0001f600", "\U000e0fff", "\U000e1000",
          "\U000f0000", "\U0010fffd", "1.2.3.4", "256.1.1.1", "2001:db8::1", "_:"]


@given(st.lists(st.sampled_from(PIECES), max_size=12).map("".join))
@settings(max_examples=3000, deadline=None)
def test_the_judge_agrees_with_the_abnf(value: str) -> None:
    assert (iri_defect(value) is None) == abnf_says_iri(value), value


@given(st.lists(st.sampled_from(PIECES), max_size=12).map("".join))
@settings(max_examples=3000, deadline=None)
def test_what_the_plain_production_takes_has_no_defect(value: str) -> None:
    """The shortcut for plain ASCII IRIs takes nothing the whole production refuses."""
    if _PLAIN_ASCII.fullmatch(value):
        assert _defect(value) is None and abnf_says_iri(value), value


def test_the_plain_production_takes_the_iris_met_most() -> None:
    """Without this the test above could pass by the shortcut taking nothing."""
    for value in ("https://s12.example.com/onto#Translate123", "urn:x-reg:s4:ocr55",
                  "https://example.org/ioa/semantic#Capability", "file:///x", "mailto:a@b.c"):
        assert _PLAIN_ASCII.fullmatch(value), value
    for value in ("https://h:80/", "https://u@h/", "https://h/?q", "https://h/%41", "a:b#c#d",
                  "https://h/ x", "https://例え.jp/", "_:b0", "rel"):
        assert not _PLAIN_ASCII.fullmatch(value), value


@given(st.text(max_size=40))
@settings(max_examples=1000, deadline=None)
def test_the_judge_agrees_with_the_abnf_on_any_text(value: str) -> None:
    for candidate in (value, "https://example.org/" + value, "urn:x:" + value):
        assert (iri_defect(candidate) is None) == abnf_says_iri(candidate), candidate


@pytest.mark.parametrize("value", [
    "https://example.org/onto/cs#Tech Translation",  # a space
    *(f"https://example.org/a{c}b" for c in '<>"{}|\\^`'),  # what RFC 3987 excludes
    "https://example.org/a\x00b", "https://example.org/a\x1fb", "https://example.org/a\x7fb",
    "https://example.org/%zz", "https://example.org/%4", "https://example.org/%",
    "https://example.org/a#b#c",  # a second '#'
    "_:b0", "cs", "/relative", "", ":x", "1a:b",
    "https://[::1%25eth0]/", "https://[1.2.3.4]/", "https://h:8o/", "https://a@b@c/",
    "https://example.org/#\ue000",  # a private-use character outside the query
])
def test_not_iris(value: str) -> None:
    assert iri_defect(value) is not None
    assert iri_scheme(value) is None


@pytest.mark.parametrize("value", [
    "https://example.org/onto/cs#TechTranslation", "urn:ioa:x", "urn:", "mailto:a@b",
    "https://[::1]:8080/x", "https://[v1.x]/", "https://u:p@h:1/p?q=1&r#f/?",
    "https://例え.jp/パス?クエリ#断片", "https://example.org/\U0001f600",
    "https://example.org/?\ue000", "HTTPS://EXAMPLE.ORG/",
])
def test_iris(value: str) -> None:
    assert is_absolute_iri(value)
    assert iri_scheme(value) == value.partition(":")[0].lower()


def test_a_defect_says_what_and_where() -> None:
    defect = iri_defect("https://example.org/a b")
    assert defect is not None and defect.position == 21 and "white space" in defect.describe()
    defect = iri_defect("https://example.org/a#b#c")
    assert defect is not None and "second '#'" in defect.what


@pytest.mark.parametrize("tail", ["a", "%41", "é", "/", "a@", "[", "%"])
def test_work_is_linear_in_the_length(tail: str) -> None:
    """Eight times the input, at most eight times the work (tests/operations.py: lines run
    and calls, counted, not timed): a judge that walked the value again per character would
    not. A backtracking pattern backtracks inside one call of the regex engine, which no
    count here sees; the patterns are possessive for that reason, and bench/ times them."""
    def work(n: int) -> int:
        value = "https://example.org/" + tail * n
        return operations(lambda: iri_defect(value))

    assert growth(work, 50_000, 400_000, base=0) <= 8
