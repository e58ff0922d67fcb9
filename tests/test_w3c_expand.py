"""W3C JSON-LD 1.1 expansion test suite run against ``ioa_semantic.expand``.

Requirements covered: R-6.1-1 (JSON-LD 1.1 expansion conforms to the W3C algorithm),
R-6.1-3 (protected term definitions: the ``#tpr*`` entries, plus the scoped, nested and
propagated context tests a protected context must survive).

The suite data is the expansion part of the w3c/json-ld-api test suite, kept in
``/work/shared/reference/w3c-jsonld-expand`` (a sibling of the repository). Documents
are served by a loader that maps ``https://w3c.github.io/json-ld-api/tests/`` onto that
folder; nothing is fetched from the network.

The runner follows the W3C harness: entries with ``option.specVersion == "json-ld-1.0"``
are not applicable to a 1.1 processor; the document base is the manifest's ``baseIri``
plus the input path unless ``option.base`` is given; ``option.processingMode`` and
``option.expandContext`` are passed through. Positive results are compared as JSON-LD:
arrays are unordered except ``@list`` contents and JSON literals (``@value``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyld import jsonld

from ioa_semantic import ExpansionError, expand

SUITE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "w3c-jsonld-expand"
MANIFEST = SUITE / "expand-manifest.jsonld"

if not MANIFEST.is_file():
    pytest.skip(
        f"W3C JSON-LD expansion suite not found at {SUITE} (expected the shared reference "
        "folder next to the repository)",
        allow_module_level=True,
    )

BASE_IRI_PREFIX = "https://w3c.github.io/json-ld-api/tests/"

# Options that describe HTTP-level behaviour (headers, content negotiation, redirects,
# status codes) which a file-backed loader cannot reproduce faithfully.
HTTP_OPTIONS = ("contentType", "httpLink", "redirectTo", "httpStatus")

# Entries where pyld itself deviates from the W3C expected result: skipped with the reason.
PROCESSOR_DEVIATIONS: dict[str, str] = {}

# Negative entries where pyld raises, but with a different error code than the manifest's
# ``expectErrorCode``: for these only the fact that an error is raised is asserted.
ERROR_CODE_DEVIATIONS: dict[str, str] = {}

# Entries whose inputs use "@"-prefixed forms reserved for future use. The spec says a
# processor SHOULD warn and ignore them; pyld emits a SyntaxWarning, which the project's
# ``filterwarnings = error`` would turn into a failure. The warning is allowed (not
# asserted: pyld caches processed contexts across calls, so it is emitted only the first
# time a given context is processed in a process).
RESERVED_FORM_WARNING = (
    r'ignore:(terms|values) beginning with "@" are reserved ?for future use:SyntaxWarning'
)
RESERVED_FORM_ENTRIES = frozenset({
    "#t0005", "#t0119", "#t0120",
    "#tpr34", "#tpr35", "#tpr36", "#tpr37", "#tpr38", "#tpr39",
})

# The number of manifest entries that are executed (not skipped). Update deliberately.
EXPECTED_RUN = 376


class SuiteLoadError(Exception):
    """The test loader refused or could not serve a URL."""


def load_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def suite_loader(url: str, options: Any = None) -> dict[str, Any]:
    """pyld document loader serving the suite folder under its published IRI prefix."""
    if not isinstance(url, str) or not url.startswith(BASE_IRI_PREFIX):
        raise jsonld.JsonLdError(
            f"the W3C suite loader serves only {BASE_IRI_PREFIX}*, not {url!r}",
            "jsonld.LoadDocumentError",
            {"url": url},
            code="loading document failed",
        )
    relative = url[len(BASE_IRI_PREFIX):].split("#", 1)[0].split("?", 1)[0]
    path = (SUITE / relative).resolve()
    if not path.is_relative_to(SUITE.resolve()) or not path.is_file():
        raise jsonld.JsonLdError(
            f"no suite document at {url!r}",
            "jsonld.LoadDocumentError",
            {"url": url},
            code="loading document failed",
        )
    try:
        document = load_json(path)
    except (OSError, ValueError) as cause:
        raise jsonld.JsonLdError(
            f"suite document {url!r} is not readable JSON",
            "jsonld.LoadDocumentError",
            {"url": url},
            code="loading document failed",
        ) from cause
    return {
        "contextUrl": None,
        "documentUrl": url,
        "document": document,
        "contentType": "application/ld+json",
    }


def _canonical(value: Any, *, ordered: bool = False) -> str:
    """A canonical JSON text: arrays sorted unless they are @list contents or literals."""
    if isinstance(value, dict):
        parts = []
        for key in sorted(value):
            item = value[key]
            if key == "@value":
                text = json.dumps(item, sort_keys=True, ensure_ascii=False)
            else:
                text = _canonical(item, ordered=key == "@list")
            parts.append(f"{json.dumps(key, ensure_ascii=False)}:{text}")
        return "{" + ",".join(parts) + "}"
    if isinstance(value, list):
        items = [_canonical(item) for item in value]
        if not ordered:
            items.sort()
        return "[" + ",".join(items) + "]"
    return json.dumps(value, ensure_ascii=False)


def jsonld_equal(actual: Any, expected: Any) -> bool:
    return _canonical(actual) == _canonical(expected)


def _manifest() -> dict[str, Any]:
    manifest: dict[str, Any] = load_json(MANIFEST)
    return manifest


MANIFEST_DATA = _manifest()
BASE_IRI: str = MANIFEST_DATA["baseIri"]


def _types(entry: dict[str, Any]) -> list[str]:
    kind = entry["@type"]
    return [kind] if isinstance(kind, str) else list(kind)


def _skip_reason(entry: dict[str, Any]) -> str | None:
    options = entry.get("option", {})
    if options.get("specVersion") == "json-ld-1.0":
        return "JSON-LD 1.0 only (option.specVersion json-ld-1.0); not applicable to 1.1"
    http = [name for name in HTTP_OPTIONS if name in options]
    if http:
        return (f"depends on HTTP-level behaviour ({', '.join(http)}) that the file loader "
                "cannot reproduce")
    if entry["@id"] in PROCESSOR_DEVIATIONS:
        return f"pyld deviation: {PROCESSOR_DEVIATIONS[entry['@id']]}"
    return None


def _params() -> tuple[list[Any], list[str]]:
    params = []
    run = []
    for entry in MANIFEST_DATA["sequence"]:
        reason = _skip_reason(entry)
        marks = [pytest.mark.skip(reason=reason)] if reason else []
        if entry["@id"] in RESERVED_FORM_ENTRIES:
            marks.append(pytest.mark.filterwarnings(RESERVED_FORM_WARNING))
        if reason is None:
            run.append(entry["@id"])
        params.append(pytest.param(entry, id=entry["@id"], marks=marks))
    return params, run


PARAMS, RUN = _params()


def _run_expand(entry: dict[str, Any]) -> list[Any]:
    options = entry.get("option", {})
    document = load_json(SUITE / entry["input"])
    base = options.get("base", BASE_IRI + entry["input"])
    kwargs: dict[str, Any] = {"base": base, "document_loader": suite_loader}
    if "processingMode" in options:
        kwargs["processing_mode"] = options["processingMode"]
    if "expandContext" in options:
        kwargs["expand_context"] = suite_loader(BASE_IRI + options["expandContext"])["document"]
    return expand(document, **kwargs).nodes


@pytest.mark.parametrize("entry", PARAMS)
def test_w3c_expand(entry: dict[str, Any]) -> None:
    types = _types(entry)
    if "jld:PositiveEvaluationTest" in types:
        expected = load_json(SUITE / entry["expect"])
        actual = _run_expand(entry)
        assert jsonld_equal(actual, expected), (
            f"{entry['@id']} ({entry.get('name')}): expansion differs\n"
            f"expected: {json.dumps(expected, indent=1, sort_keys=True)}\n"
            f"actual:   {json.dumps(actual, indent=1, sort_keys=True)}"
        )
    elif "jld:NegativeEvaluationTest" in types:
        with pytest.raises(ExpansionError) as caught:
            _run_expand(entry)
        if entry["@id"] not in ERROR_CODE_DEVIATIONS:
            assert caught.value.code == entry["expectErrorCode"], (
                f"{entry['@id']} ({entry.get('name')}): expected error code "
                f"{entry['expectErrorCode']!r}, got {caught.value.code!r}: {caught.value}"
            )
    else:
        pytest.fail(f"{entry['@id']}: unknown test type {types}")


def test_w3c_expand_suite_size() -> None:
    """The executed part of the suite cannot shrink (or grow) silently."""
    assert len(MANIFEST_DATA["sequence"]) == 385
    assert len(RUN) == EXPECTED_RUN


def test_deviation_lists_name_real_entries() -> None:
    ids = {entry["@id"] for entry in MANIFEST_DATA["sequence"]}
    assert set(PROCESSOR_DEVIATIONS) <= ids
    assert set(ERROR_CODE_DEVIATIONS) <= ids
    assert ids >= RESERVED_FORM_ENTRIES
    negatives = {e["@id"] for e in MANIFEST_DATA["sequence"]
                 if "jld:NegativeEvaluationTest" in _types(e)}
    assert set(ERROR_CODE_DEVIATIONS) <= negatives


def test_suite_loader_refuses_other_urls() -> None:
    with pytest.raises(jsonld.JsonLdError):
        suite_loader("https://example.org/context.jsonld", {})
    with pytest.raises(jsonld.JsonLdError):
        suite_loader(BASE_IRI_PREFIX + "expand/does-not-exist.jsonld", {})
    with pytest.raises(jsonld.JsonLdError):
        suite_loader(BASE_IRI_PREFIX + "../../etc/passwd", {})


def test_jsonld_comparison_orders_only_lists() -> None:
    assert jsonld_equal([{"@id": "a"}, {"@id": "b"}], [{"@id": "b"}, {"@id": "a"}])
    assert not jsonld_equal([{"@list": [1, 2]}], [{"@list": [2, 1]}])
    assert not jsonld_equal([{"@value": [1, 2], "@type": "@json"}],
                            [{"@value": [2, 1], "@type": "@json"}])
    assert not jsonld_equal([{"@value": 1}], [{"@value": "1"}])
