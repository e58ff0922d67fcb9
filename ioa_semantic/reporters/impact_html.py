"""An impact run as one self-contained HTML page (``ioa-check impact --format html``), in the
audit report's style: the totals, the change, a transition matrix (the verdict before by the
verdict after), the decisions skipped and not judged again by reason, the flips by cause, and
a filterable table of the flips with the reasons each adds and removes.

The page is rendered by the audit report's Jinja2 environment (autoescaped, its ``text``
filter escaping every string from the input and showing the characters that hide or reorder
text as their code points), from templates that are package data (``data/report/impact*``).
Its style (the audit's, and a few rules of its own) and its script are inlined and allowed by
their hashes in the page's Content-Security-Policy: the page fetches nothing.

The table keeps the first :data:`PER_TRANSITION` flips of each transition, each row rendered
as the run streams with at most :data:`~.audit_html.REASONS` reasons added and removed: the
page's size is bounded by the number of transitions (at most sixteen), not by the log's; the
counts are exact, and the page says how many it left out.
"""

from __future__ import annotations

from collections import Counter
from typing import IO, Any

from .._findings import Verdict
from .._version import __version__
from ..impact import AnyFlip, ImpactRun
from .audit_html import REASONS, _asset, _environment, _hash, _script_json

PER_TRANSITION = 200  # flips listed per transition, in log order

_VERDICTS = tuple(str(v) for v in Verdict)
_STATUSES = ("absent", "valid", "invalid", "indeterminate")


def _policy(style: str, script: str) -> str:
    # As the audit's page: nothing fetched, the one style and the one script by their hashes.
    return (f"default-src 'none'; style-src {_hash(style)}; script-src {_hash(script)}; "
            "img-src data:; base-uri 'none'; form-action 'none'")


def _row(flip: AnyFlip) -> Any:
    from markupsafe import Markup

    codes = sorted({str(r.get("code")) for r in (*flip.added, *flip.removed)})
    return Markup(_environment().get_template("impact-row.html").render(
        flip=flip, codes=codes, REASONS=REASONS))


def impact_html(impact: ImpactRun, stream: IO[str]) -> None:
    """The impact run's page, written once every flip is in (the totals come first)."""
    from markupsafe import Markup

    rows: list[Any] = []
    listed: Counter[str] = Counter()
    for flip in impact:
        if listed[flip.transition] < PER_TRANSITION:
            listed[flip.transition] += 1
            rows.append(_row(flip))
    summary = impact.summary
    assert summary is not None
    style = _asset("audit.css") + _asset("impact.css")
    script = _asset("impact.js")
    # An audit's registrations are valid, invalid or indeterminate, or were absent.
    verdicts = list(_VERDICTS if summary.subject == "decision" else _STATUSES)
    transitions = dict(summary.transitions)
    matrix = [(before, [(after, transitions.get(f"{before} -> {after}", 0))
                        for after in verdicts]) for before in verdicts]
    totals = [("decisions", "Decisions", summary.decisions, ""),
              ("rejudged", "Judged again", summary.rejudged, ""),
              ("flipped", "Flipped", summary.flipped, "invalid"),
              ("unchanged", "Unchanged", summary.unchanged, ""),
              ("skipped", "Skipped", sum(summary.skipped.values()), ""),
              ("unjudgeable", "Not judged again", sum(summary.unjudgeable.values()),
               "indeterminate")]
    template = _environment().get_template("impact.html")
    stream.writelines(template.generate(
        csp=Markup(_policy(style, script)), version=__version__, style=Markup(style),
        script=Markup(script), summary=summary, totals=totals, verdicts=verdicts,
        matrix=matrix, rows=rows, listed=sum(listed.values()), logs=impact.logs,
        PER_TRANSITION=PER_TRANSITION,
        summary_json=Markup(_script_json({"summary": summary.as_dict()}))))
