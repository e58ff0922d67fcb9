"""Impact before change (issue 40, item 3), measured: a one-statement profile change over a
corpus of registrations (an audit's report and its inputs) and over a decision log, against
judging everything twice, with reading the report or log alone as the floor.

Usage: python bench/bench_impact.py [--size 1000000] [--log-size 1000000] [--jobs 2]
       [--corpora registrations,logs] [--log-changes trust,domain] [--distinct 2000]
       [--keep FOLDER]
(run with the interpreter of an environment where the project is installed with [test]).

Registrations: ``--size`` registrations of bench/traffic.py (``registrations(size, 50_000)``,
about 4% invalid) are written to a JSON Lines file and audited once under the shipped profile
(``ioa-check audit --format json``: the before). For each change, three rows, each one process
(wall time and peak RSS of the largest process, from /usr/bin/time):

* naive: the corpus audited under the old profile (the before, measured once) and under the
  new one (``--jobs`` each), and the two reports compared line by line;
* impact: ``ioa-check impact --audit-report ... --registrations ... --profile NEW``;
* floor: the report read alone (each line parsed as JSON).

Decision log: ``--log-size`` decisions, of ``--distinct`` distinct envelopes (2,000 by
default; fewer for a smaller log) of bench/traffic.py (``envelopes(distinct, 5)``, the 12.1
provider and the shipped artifact offered, ``zh`` to ``en``), judged once into a log by a
Checker and the lines repeated to the size (each decision repeated size / distinct times).
Rows: naive (every logged envelope judged under the old and the new configuration, one
Checker each, the verdicts and reasons compared), impact (``ioa-check impact LOG --profile
NEW``), impact with its memo off (the library's ``Impact(..., memo=False)``: every touched
decision judged afresh) and floor (the log read alone, ``read_log``).

The changes, each one statement of the shipped profile's Turtle:

* ``domain``: ``iop:permittedDomain cs:ComputerScience, law:Law`` (an audit does not read it;
  a decision past the baseline does);
* ``scheme``: ``iop:allowedScheme ... "xx"`` (the baseline reads it: every registration and
  every decision);
* ``trust``: a second ``iop:trustedIssuer`` (an audit does not read it; a decision that
  screened artifacts does).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import traffic  # noqa: E402  (bench/traffic.py, beside this file)

IOA_CHECK = str(Path(sys.executable).with_name("ioa-check"))
SHIPPED = (ROOT / "ioa_semantic/data/profiles/cs-translation.ttl").read_text()
CHANGES = {
    "domain": ("iop:permittedDomain cs:ComputerScience ;",
               "iop:permittedDomain cs:ComputerScience, law:Law ;"),
    "scheme": ('iop:allowedScheme "https", "http", "urn" ;',
               'iop:allowedScheme "https", "http", "urn", "xx" ;'),
    "trust": ("iop:trustedIssuer <https://example.org/mapping-authority> .",
              "iop:trustedIssuer <https://example.org/mapping-authority>, "
              "<https://example.org/someone> ."),
}
DISTINCT_ENVELOPES = 2000

# The naive way over registrations, its second half: the audit under the new profile, then
# the two reports compared line by line (the first half is the audit under the old one).
NAIVE_REGISTRATIONS = """
import subprocess, sys
ioa, corpus, new, jobs, old_out, new_out = sys.argv[1:]
subprocess.run([ioa, "audit", corpus, "--profile", new, "--format", "json", "--jobs", jobs,
                "--output", new_out])
differ = 0
with open(old_out) as old, open(new_out) as now:
    for a, b in zip(old, now):
        differ += a != b
print(differ)
"""

# The floor: the report or log read alone.
FLOOR_REPORT = """
import json, sys
n = 0
with open(sys.argv[1], "rb") as handle:
    for line in handle:
        json.loads(line)
        n += 1
print(n)
"""
FLOOR_LOG = """
import sys
from ioa_semantic.impact import read_log
print(sum(1 for _ in read_log(sys.argv[1])))
"""

# Impact with its memo off: every touched decision judged afresh, repeats too.
IMPACT_NO_MEMO = """
import sys
from ioa_semantic.impact import Change, Impact
impact = Impact([sys.argv[1]], Change(profile=sys.argv[2]), memo=False)
flipped = sum(1 for _ in impact)
print(f"{impact.summary.rejudged} judged again, {flipped} flipped (memo off)")
"""

# The naive way over a log: every logged envelope judged under the old and the new
# configuration (one Checker each, built as the log records it), the decisions compared.
NAIVE_LOG = """
import sys
from datetime import datetime
from ioa_semantic import Checker
from ioa_semantic.impact import read_log
from ioa_semantic.impact.log import Logged, object_path
log, new = sys.argv[1:]
checkers, objects, differ = {}, {}, 0

def kept(digest):
    if digest not in objects:
        with open(object_path(log, digest), "rb") as handle:
            objects[digest] = handle.read()
    return objects[digest]

for item in read_log(log):
    if not isinstance(item, Logged):
        continue
    entry = item.entry
    configuration = entry["configuration"]
    key = entry["checker"]
    if key not in checkers:
        offered = dict(capabilities=[kept(c["sha256"]) for c in configuration["capabilities"]],
                       alignments=[kept(a["sha256"]) for a in configuration["alignments"]])
        checkers[key] = (Checker(configuration["profile"]["source"], **offered),
                         Checker(new, **offered))
    envelope = kept(entry["envelope"]["sha256"])
    at = datetime.fromisoformat(entry["at"])
    old, now = (c.check(envelope, params=entry["params"], at=at) for c in checkers[key])
    differ += (old.verdict, old.findings) != (now.verdict, now.findings)
print(differ)
"""


def measured(command: list[str], out: Path | None = None) -> tuple[float, float, str]:
    """Wall seconds and peak RSS (MiB, the largest process) of ``command``; its stdout's
    last line (or ``out``'s last line)."""
    with tempfile.TemporaryFile() as stdout:
        done = subprocess.run(["/usr/bin/time", "-f", "%e %M", *command], stdout=stdout,
                              stderr=subprocess.PIPE, text=False, check=False)
        stdout.seek(0)
        text = stdout.read().decode()
    wall, peak = done.stderr.decode().strip().splitlines()[-1].split()
    last = (text.strip().splitlines() or [""])[-1]
    return float(wall), int(peak) / 1024, last


def profile_of(folder: Path, change: str) -> Path:
    old, new = CHANGES[change]
    assert old in SHIPPED, change
    path = folder / f"{change}.ttl"
    path.write_text(SHIPPED.replace(old, new))
    return path


def row(corpus: str, size: int, change: str, way: str, wall: float, peak: float,
        said: str, naive: float | None) -> dict[str, object]:
    if said.startswith('{"summary"'):  # impact's last line: what it judged again
        summary = json.loads(said)["summary"]
        said = (f"{summary['rejudged']} of {summary.get('registrations', summary.get('decisions'))}"
                f" judged again, {summary['flipped']} flipped")
    found = {"corpus": corpus, "size": size, "change": change, "way": way,
             "seconds": round(wall, 1), "peak_mib": round(peak), "said": said[:160]}
    if naive is not None and wall:
        found["faster_than_naive"] = round(naive / wall, 1)
    print(json.dumps(found), flush=True)
    return found


def registrations(folder: Path, size: int, jobs: int) -> None:
    corpus, report = folder / "registrations.jsonl", folder / "audit.jsonl"
    before = folder / "audit.measured.json"
    if before.exists() and report.exists():  # a kept corpus and its audit, measured before
        wall, peak = json.loads(before.read_text())
    else:
        traffic.write(corpus, traffic.registrations(size, 50_000))
        wall, peak, _ = measured([IOA_CHECK, "audit", str(corpus), "--profile",
                                  "cs-translation", "--format", "json", "--jobs", str(jobs),
                                  "--output", str(report)])
        before.write_text(json.dumps([wall, peak]))
    row("registrations", size, "-", "one audit (the before)", wall, peak, "", None)
    floor = measured([sys.executable, "-c", FLOOR_REPORT, str(report)])
    for change in ("domain", "scheme"):
        new = profile_of(folder, change)
        # Judging everything twice: the audit under the old profile (the one above, measured
        # once for every change), then under the new one and the two compared.
        second = measured([sys.executable, "-c", NAIVE_REGISTRATIONS, IOA_CHECK, str(corpus),
                           str(new), str(jobs), str(report), str(folder / "new.jsonl")])
        naive = (wall + second[0], max(peak, second[1]), second[2])
        row("registrations", size, change, "naive: judge everything twice", *naive, None)
        impact = measured([IOA_CHECK, "impact", "--audit-report", str(report),
                           "--registrations", str(corpus), "--audited-profile",
                           "cs-translation", "--profile", str(new), "--jobs", str(jobs),
                           "--format", "json"])
        row("registrations", size, change, "impact", *impact, naive[0])
        row("registrations", size, change, "floor: the report read alone", *floor, naive[0])


def logs(folder: Path, size: int, changes: list[str], distinct: int = DISTINCT_ENVELOPES
         ) -> None:
    from datetime import UTC, datetime

    from ioa_semantic import Checker
    from ioa_semantic.impact import DecisionLog

    log = folder / "decisions.jsonl"
    checker = Checker("cs-translation", capabilities=[ROOT / "examples/provider-12.1.jsonld"],
                      alignments=["cs-doc-v1"], recorder=DecisionLog(str(log),
                                                                      max_bytes=1 << 40))
    june = datetime(2026, 6, 1, tzinfo=UTC)
    for envelope in traffic.envelopes(min(distinct, size), 5):
        checker.check(envelope, params={"sourceLang": "zh", "targetLang": "en"}, at=june)
    lines = log.read_bytes().splitlines(keepends=True)
    with log.open("wb") as handle:
        for index in range(size):
            handle.write(lines[index % len(lines)])
    floor = measured([sys.executable, "-c", FLOOR_LOG, str(log)])
    for change in changes:
        new = profile_of(folder, change)
        naive = measured([sys.executable, "-c", NAIVE_LOG, str(log), str(new)])
        row("log", size, change, "naive: judge everything twice", *naive, None)
        impact = measured([IOA_CHECK, "impact", str(log), "--profile", str(new), "--format",
                           "json"])
        row("log", size, change, "impact", *impact, naive[0])
        fresh = measured([sys.executable, "-c", IMPACT_NO_MEMO, str(log), str(new)])
        row("log", size, change, "impact, memo off", *fresh, naive[0])
        row("log", size, change, "floor: the log read alone", *floor, naive[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000,
                        help="registrations (default 1,000,000)")
    parser.add_argument("--log-size", type=int, default=1_000_000,
                        help="logged decisions (default 1,000,000)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--corpora", default="registrations,logs")
    parser.add_argument("--log-changes", default="trust,domain",
                        help="the changes measured over the log (default: trust,domain)")
    parser.add_argument("--distinct", type=int, default=DISTINCT_ENVELOPES,
                        help="distinct envelopes in the log (default 2,000): each decision is "
                             "repeated log-size / distinct times")
    parser.add_argument("--keep", metavar="FOLDER",
                        help="write the corpora here and keep them (default: a temporary "
                             "folder, removed); a folder that holds the registrations, their "
                             "audit and its measure is used again as it is")
    args = parser.parse_args()
    folder = Path(args.keep or tempfile.mkdtemp(prefix="bench-impact-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(json.dumps({"load": os.getloadavg(), "cpus": os.cpu_count()}), flush=True)
    try:
        if "registrations" in args.corpora:
            registrations(folder, args.size, args.jobs)
        if "logs" in args.corpora:
            logs(folder, args.log_size, args.log_changes.split(","), args.distinct)
    finally:
        print(json.dumps({"load": os.getloadavg()}), flush=True)
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
