"""The decision log and ``ioa-check impact`` (issue 40, items 1 and 2; draft S5)."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ioa_semantic import Checker
from ioa_semantic._checker import Checked
from ioa_semantic.cli.main import main
from ioa_semantic.impact import FORMAT, Change, DecisionLog, Impact, read_log
from ioa_semantic.impact.log import Damage, Logged, objects_folder

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ENVELOPE = (EXAMPLES / "envelope-12.1.jsonld").read_bytes()
PROVIDER = str(EXAMPLES / "provider-12.1.jsonld")
CS_DOC = "https://example.org/align/cs-doc-v1"
JUNE = datetime(2026, 6, 1, tzinfo=UTC)
LANGUAGES = {"sourceLang": "zh", "targetLang": "en"}


def logged(tmp_path: Path, *, alignments: tuple[str, ...] = ("cs-doc-v1",),
           checks: tuple[tuple[bytes, dict[str, str]], ...] = ((ENVELOPE, LANGUAGES),),
           max_bytes: int = 1 << 20) -> str:
    log = str(tmp_path / "decisions.jsonl")
    checker = Checker("cs-translation", capabilities=[PROVIDER], alignments=alignments,
                      recorder=DecisionLog(log, max_bytes=max_bytes))
    for envelope, params in checks:
        checker.check(envelope, params=params, at=JUNE, source="e.jsonld")
    return log


def entries(log: str) -> list[Logged | Damage]:
    return list(read_log(log))


def test_a_decision_is_logged_with_its_envelope_kept_once_by_digest(tmp_path: Path) -> None:
    log = logged(tmp_path, checks=((ENVELOPE, LANGUAGES), (ENVELOPE, {})))
    first, second = entries(log)
    assert isinstance(first, Logged) and isinstance(second, Logged)
    line = first.entry
    assert line["format"] == FORMAT
    assert line["decision"] == {"verdict": "compatible", "reasons": []}
    assert line["params"] == LANGUAGES and line["at"] == "2026-06-01T00:00:00Z"
    assert line["dependencies"]["read"]["artifacts"] is True
    digest = line["envelope"]["sha256"]
    assert second.entry["envelope"]["sha256"] == digest
    kept = Path(objects_folder(log), digest[:2], digest)
    assert kept.read_bytes() == ENVELOPE
    # The pair looked up and not found (no languages: the condition cannot be evaluated).
    assert second.entry["dependencies"]["read"]["lookups"][0]["capability"] == (
        "https://example.org/onto/cs#TechTranslation")


def test_the_log_rotates_by_size_and_is_read_oldest_first(tmp_path: Path) -> None:
    params = [{"sourceLang": f"l{i}"} for i in range(5)]
    log = logged(tmp_path, checks=tuple((ENVELOPE, p) for p in params), max_bytes=4000)
    assert Path(log + ".1").exists() and Path(log + ".2").exists()
    read = entries(log)
    assert [e.entry["params"] for e in read if isinstance(e, Logged)] == params


def test_a_cut_or_damaged_log_is_read_up_to_the_damage_with_a_reason(tmp_path: Path) -> None:
    log = logged(tmp_path, checks=((ENVELOPE, LANGUAGES), (ENVELOPE, {}), (ENVELOPE, {})))
    lines = Path(log).read_bytes().splitlines(keepends=True)
    Path(log).write_bytes(lines[0] + lines[1][:40])
    read = entries(log)
    assert isinstance(read[0], Logged)
    assert isinstance(read[1], Damage) and "cut" in read[1].reason and read[1].line == 2
    Path(log).write_bytes(lines[0] + b'{"format": "ioa-decision-log/1"}\n' + lines[2])
    read = entries(log)
    assert [type(e) for e in read] == [Logged, Damage]
    assert isinstance(read[1], Damage) and "missing" in read[1].reason


def test_the_command_says_the_damage_and_judges_what_it_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = logged(tmp_path)
    with open(log, "ab") as handle:
        handle.write(b"\x00garbage")
    status = main(["impact", log, "--at", "2027-01-01T00:00:00Z", "--format", "json"])
    out, err = capsys.readouterr()
    assert status == 1
    assert "line 2" in err and "cut" in err and "Traceback" not in err
    summary = json.loads(out.splitlines()[-1])["summary"]
    assert summary["decisions"] == 1 and summary["flipped"] == 1
    assert summary["warnings"]


def test_an_instant_past_a_validity_limit_flips_and_one_before_is_skipped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = logged(tmp_path)
    assert main(["impact", log, "--at", "2026-07-01T00:00:00Z", "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["rejudged"] == 0
    assert summary["skipped"] == {"the instant is on the same side of every validity limit": 1}
    assert main(["impact", log, "--at", "2027-01-01T00:00:00Z", "--format", "json"]) == 1
    flip, last = (json.loads(x) for x in capsys.readouterr().out.splitlines())
    assert flip["transition"] == "compatible -> indeterminate"
    assert {r["code"] for r in flip["added"]} == {"alignment.no-accepted-mapping",
                                                  "alignment.expired"}
    assert flip["causes"] == ["instant 2027-01-01T00:00:00Z"]
    assert last["summary"]["transitions"] == {"compatible -> indeterminate": 1}


def test_an_artifact_added_for_a_pair_looked_up_and_not_found_flips_it(tmp_path: Path) -> None:
    # No artifact offered: the mapping was looked up and not found.
    log = logged(tmp_path, alignments=())
    impact = Impact([log], Change(added=("cs-doc-v1",)))
    (flip,) = list(impact)
    assert flip.transition == "indeterminate -> compatible"
    assert [r["code"] for r in flip.removed] == ["alignment.no-accepted-mapping"]
    assert flip.causes == (f"artifact added: {CS_DOC} revision 1",)


def test_what_a_decision_did_not_read_is_skipped_with_the_reason(tmp_path: Path) -> None:
    invalid = b"{"
    unaccepted = ENVELOPE.replace(b'"1.0"', b'"9.9"')
    log = logged(tmp_path, checks=((invalid, {}), (unaccepted, {}), (ENVELOPE, LANGUAGES)))
    impact = Impact([log], Change(withdrawn=(CS_DOC,)))
    (flip,) = list(impact)
    assert flip.line == 3
    assert impact.summary is not None
    assert impact.summary.skipped == {
        "no artifact was read: the envelope was rejected before compatibility was evaluated": 1,
        "no artifact was read: the envelope's ontology version is not accepted": 1}
    unrelated = Impact([log], Change(withdrawn=("https://example.org/align/other",)))
    assert list(unrelated) == []
    assert unrelated.summary is not None and unrelated.summary.rejudged == 0


def test_a_revised_profile_replaces_the_logged_one(tmp_path: Path) -> None:
    log = logged(tmp_path)
    shipped = Path(__file__).resolve().parents[1] / "ioa_semantic/data/profiles/cs-translation.ttl"
    revised = tmp_path / "revised.ttl"
    revised.write_text(shipped.read_text().replace("mapping-authority", "other-authority"))
    (flip,) = list(Impact([log], Change(profile=str(revised))))
    assert "alignment.untrusted" in {r["code"] for r in flip.added}
    same = Impact([log], Change(profile="cs-translation"))
    assert list(same) == [] and same.summary is not None
    assert same.summary.skipped == {"the profile is unchanged": 1}


NAMED = ENVELOPE.replace(b'"@type": "ioa:SemanticProfile",',
                         b'"@type": "ioa:SemanticProfile", "@id": "urn:e:1",')


def test_an_ambiguous_instance_revision_is_ambiguous_again_when_judged_again(
        tmp_path: Path) -> None:
    # 5.3: the same @id (and no profileVersion) with two contents; the second is ambiguous
    # in the Checker that logged them. The first, under a version not accepted, read no
    # artifact and is skipped; the second is judged again, as ambiguous as it was.
    unaccepted = NAMED.replace(b'"1.0"', b'"9.9"')
    log = logged(tmp_path, checks=((unaccepted, LANGUAGES), (NAMED, LANGUAGES)))
    second = entries(log)[1]
    assert isinstance(second, Logged)
    assert "profile.revision-ambiguous" in {r["code"] for r in
                                            second.entry["decision"]["reasons"]}
    impact = Impact([log], Change(at=datetime(2027, 1, 1, tzinfo=UTC)))
    (flip,) = list(impact)
    assert flip.line == 2 and "profile.revision-ambiguous" in {
        r["code"] for r in flip.after["reasons"]}
    assert impact.summary is not None and impact.summary.rejudged == 1


def test_each_logged_checker_s_memory_of_instances_is_its_own(tmp_path: Path) -> None:
    # Two runs of one configuration: the named instance is ambiguous in the first (another
    # content came first) and not in the second, which saw it first; so again when judged.
    other = NAMED.replace(b'"LLM"', b'"large language model"')
    log = logged(tmp_path, checks=((other, LANGUAGES), (NAMED, LANGUAGES)))
    logged(tmp_path, checks=((NAMED, LANGUAGES),))
    verdicts = [e.entry["decision"]["verdict"] for e in entries(log) if isinstance(e, Logged)]
    assert verdicts == ["compatible", "indeterminate", "compatible"]
    impact = Impact([log], Change(at=datetime(2026, 7, 1, tzinfo=UTC)), everything=True)
    assert list(impact) == []
    assert impact.summary is not None and impact.summary.unchanged == 3


def test_interleaved_checkers_each_restore_an_instance_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A service's workers append to one log, their decisions interleaved: a replay shared
    # by the two would restore its whole memory at every switch, quadratic in the log.
    from ioa_semantic.impact import rejudge

    log = str(tmp_path / "decisions.jsonl")
    checkers = [Checker("cs-translation", capabilities=[PROVIDER], alignments=["cs-doc-v1"],
                        recorder=DecisionLog(log)) for _ in range(2)]
    for n in range(12):
        envelope = NAMED.replace(b"urn:e:1", f"urn:e:{n}".encode())
        checkers[n % 2].check(envelope, params=LANGUAGES, at=JUNE, source=f"{n}.jsonld")
    restored = 0
    since = rejudge.Seen.since

    def counted(seen: rejudge.Seen, position: int) -> list[tuple[bytes, bytes]]:
        nonlocal restored
        found = since(seen, position)
        restored += len(found)
        return found

    monkeypatch.setattr(rejudge.Seen, "since", counted)
    impact = Impact([log], Change(at=datetime(2027, 1, 1, tzinfo=UTC)))
    assert len(list(impact)) == 12
    assert restored == 12


def _without_first_instance(log: str) -> None:
    """The log as a Checker writes it when its first decision read no instance (one
    rejected before its instance was read, 5.3): that line's record of it taken out."""
    lines = Path(log).read_bytes().splitlines(keepends=True)
    first = json.loads(lines[0])
    del first["instance"]
    lines[0] = json.dumps(first).encode() + b"\n"
    Path(log).write_bytes(b"".join(lines))


@pytest.mark.parametrize("memo", [True, False])
def test_a_decision_is_judged_against_the_instances_its_checker_logged(
        tmp_path: Path, memo: bool) -> None:
    # Issue 40, item 3: the revision memory a decision is judged again with is its logged
    # Checker's, never what another decision read only when judged again (the first here,
    # whose record of its instance the log does not hold): so which decisions are judged,
    # and where a cluster's batches begin, cannot change a decision's judgement. The second
    # was ambiguous against a content the log does not name; judged again, it is not.
    other = NAMED.replace(b'"LLM"', b'"large language model"')
    log = logged(tmp_path, checks=((other, LANGUAGES), (NAMED, LANGUAGES)))
    _without_first_instance(log)
    impact = Impact([log], Change(at=datetime(2026, 7, 1, tzinfo=UTC)), everything=True,
                    memo=memo)
    (flip,) = list(impact)
    assert flip.line == 2 and [r["code"] for r in flip.removed] == [
        "profile.revision-ambiguous"]
    assert flip.after["verdict"] == "compatible"


def test_a_cluster_s_batches_judge_as_the_local_run_does(tmp_path: Path) -> None:
    # Issue 40, item 3: the judging a Dask worker does (impact.cluster.judge_batch, over
    # what a batch carries), run here in batches of one decision: the output is the local
    # run's, where a decision read an instance its logged line does not record.
    from ioa_semantic.impact import cluster

    other = NAMED.replace(b'"LLM"', b'"large language model"')
    log = logged(tmp_path, checks=((other, LANGUAGES), (NAMED, LANGUAGES), (other, {}),
                                   (NAMED, {})))
    _without_first_instance(log)
    change = Change(at=datetime(2026, 7, 1, tzinfo=UTC))

    def in_batches_of_one(touched):  # type: ignore[no-untyped-def]
        for one in touched:
            (outcome,) = cluster.judge_batch(cluster.on_workers(change),
                                             cluster._carried([one]))
            yield one, outcome

    local = Impact([log], change, everything=True)
    batched = Impact([log], change, everything=True, judging=in_batches_of_one)
    assert [f.as_dict() for f in batched] == [f.as_dict() for f in local]
    assert batched.summary == local.summary and local.summary is not None
    assert local.summary.flipped >= 1


def test_a_batch_carries_the_instances_a_decision_had_when_it_was_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 40, item 3: a batch fills while the log is read on; a logged Checker's instances
    # read after one of its decisions (here, skipped ones) drop the oldest it had. Carried
    # when the batch was full, the second decision lost the first content of its instance
    # and was no longer ambiguous, where the local run judged it so.
    from ioa_semantic.impact import cluster, rejudge

    monkeypatch.setattr(rejudge, "INSTANCES", 2)  # a Checker's memory, as a log far longer
    unaccepted = NAMED.replace(b'"1.0"', b'"9.9"')  # no artifact read: skipped by the instant
    later = tuple((unaccepted.replace(b"urn:e:1", f"urn:e:{n}".encode()), LANGUAGES)
                  for n in range(2, 9))
    log = logged(tmp_path, checks=((unaccepted, LANGUAGES), (NAMED, LANGUAGES), *later))
    change = Change(at=datetime(2027, 1, 1, tzinfo=UTC))

    class Here:
        """A client whose batches are judged here, as they are submitted."""

        def nthreads(self) -> dict[str, int]:
            return {"here": 1}

        def submit(self, judge, *args, pure: bool):  # type: ignore[no-untyped-def]
            outcomes = judge(*args)
            return type("Done", (), {"result": lambda self: outcomes})()

    local = Impact([log], change)
    batched = Impact([log], change, judging=cluster.judging(Here(), change))  # type: ignore[arg-type]
    (flip,) = list(local)
    assert "profile.revision-ambiguous" in {r["code"] for r in flip.after["reasons"]}
    assert [f.as_dict() for f in batched] == [flip.as_dict()]


def test_an_instance_seen_long_ago_among_few_others_is_remembered_when_judged_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A Checker holds the last INSTANCES distinct pairs, however many decisions ago each was
    # last seen: a sender that sends one named task again and again fills the log, not the
    # memory. Dropping the log's entries by their count forgot the first content of urn:e:1,
    # and the second was judged not ambiguous, a flip no change caused.
    from ioa_semantic.impact import rejudge

    monkeypatch.setattr(rejudge, "INSTANCES", 2)  # a Checker's memory, as a log far longer
    unaccepted = NAMED.replace(b'"1.0"', b'"9.9"')  # no artifact read: skipped by the instant
    again = unaccepted.replace(b"urn:e:1", b"urn:e:2")
    log = logged(tmp_path, checks=((unaccepted, LANGUAGES), *[(again, LANGUAGES)] * 6,
                                   (NAMED, LANGUAGES)))
    impact = Impact([log], Change(at=datetime(2027, 1, 1, tzinfo=UTC)))
    (flip,) = list(impact)
    assert flip.line == 8 and flip.before["verdict"] == "indeterminate"
    assert "profile.revision-ambiguous" not in {r["code"] for r in flip.removed}


def test_a_change_must_be_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as usage:
        main(["impact", str(tmp_path / "none.jsonl"), "--format", "json"])
    assert usage.value.code == 2
    assert main(["impact", str(tmp_path / "none.jsonl"), "--at", "2027-01-01T00:00:00Z"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "cannot be read" in err


def test_check_logs_with_an_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "d.jsonl"
    assert main(["check", str(EXAMPLES / "envelope-12.1.jsonld"), "--profile", "cs-translation",
                 "--at", "2026-06-01T00:00:00Z", "--log", str(log)]) == 0
    capsys.readouterr()
    (line,) = entries(str(log))
    assert isinstance(line, Logged) and line.entry["configuration"]["profile"]["source"] == (
        "cs-translation")


def test_an_artifact_added_under_the_id_an_alignment_ref_names_is_judged_against_it(
        tmp_path: Path) -> None:
    # The envelope's alignmentRef names cs-doc-v1, which was to be retrieved (and refused)
    # because none of that id was offered: offering one changes that. The other decision
    # screened the (no) offered artifacts, so it is judged again, and does not flip: the
    # added artifact is usable, and no mapping is asked of it.
    referring = ENVELOPE.replace(b'"@type": "ioa:SemanticProfile",',
                                 b'"@type": "ioa:SemanticProfile", '
                                 b'"ioa:alignmentRef": {"@id": "' + CS_DOC.encode() + b'"},')
    log = str(tmp_path / "d.jsonl")
    checker = Checker("cs-translation", recorder=DecisionLog(log))
    checker.check(referring, at=JUNE)
    checker.check(ENVELOPE, at=JUNE)
    impact = Impact([log], Change(added=("cs-doc-v1",)))
    (flip,) = list(impact)
    assert flip.line == 1 and [r["code"] for r in flip.removed] == ["retrieval.prohibited"]
    assert impact.summary is not None and impact.summary.skipped == {}


def test_writers_of_one_log_rotating_it_at_once_lose_and_repeat_no_line(tmp_path: Path) -> None:
    # The service's worker processes each append to the log through a DecisionLog of their
    # own: here eight, on threads (the file lock holds between open files as between
    # processes), rotating every few lines.
    log = str(tmp_path / "d.jsonl")
    checker = Checker("cs-translation", recorder=DecisionLog(str(tmp_path / "first.jsonl")))
    decision = checker.check(ENVELOPE, at=JUNE)
    writers = [DecisionLog(log, max_bytes=5000) for _ in range(8)]

    def write(index: int) -> None:
        for n in range(60):
            writers[index].record(checker, Checked(ENVELOPE, {"sourceLang": f"w{index}-{n}"},
                                                   JUNE, decision, None))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    read = entries(log)
    assert all(isinstance(e, Logged) for e in read)
    assert sorted(e.entry["params"]["sourceLang"] for e in read if isinstance(e, Logged)) == (
        sorted(f"w{i}-{n}" for i in range(8) for n in range(60)))


def test_the_service_logs_what_its_check_workers_decide(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn")
    import re
    import signal
    import subprocess
    import time

    import httpx

    from support import IOA_CHECK

    log, stderr = tmp_path / "d.jsonl", tmp_path / "stderr"
    with stderr.open("wb") as handle:
        service = subprocess.Popen([IOA_CHECK, "serve", "--profile", "cs-translation",
                                    "--alignment", "cs-doc-v1", "--log", "d.jsonl",
                                    "--port", "0"], cwd=tmp_path, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=handle)
    try:
        deadline = time.monotonic() + 60  # a liveness bound, not a measure
        while not (found := re.search(r"listening on (http://\S+)", stderr.read_text())):
            assert service.poll() is None and time.monotonic() < deadline, stderr.read_text()
            time.sleep(0.05)
        answer = httpx.post(f"{found.group(1)}/v1/check", content=ENVELOPE,
                            params={"at": "2026-06-01T00:00:00Z"},
                            headers={"Content-Type": "application/ld+json"}, timeout=60)
        assert answer.status_code == 200
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(60)
    (line,) = entries(str(log))
    assert isinstance(line, Logged) and line.entry["decision"]["verdict"] == "compatible"
    assert line.entry["configuration"]["alignments"][0]["artifactId"] == CS_DOC


def test_a_line_of_the_wrong_kind_is_damage_and_a_lost_envelope_is_counted(
        tmp_path: Path) -> None:
    log = logged(tmp_path, checks=((ENVELOPE, LANGUAGES), (ENVELOPE, {})))
    first, second = Path(log).read_text().splitlines(keepends=True)
    entry = json.loads(first)
    entry["dependencies"]["artifacts"][0]["validUntil"] = "2026-12-31"  # no UTC offset
    Path(log).write_text(json.dumps(entry) + "\n" + second)
    (damage,) = entries(log)
    assert isinstance(damage, Damage) and "validUntil" not in damage.reason
    assert "instant" in damage.reason
    Path(log).write_text(first + second)
    digest = json.loads(first)["envelope"]["sha256"]
    Path(objects_folder(log), digest[:2], digest).unlink()
    impact = Impact([log], Change(at=datetime(2027, 1, 1, tzinfo=UTC)))
    assert list(impact) == []
    assert impact.summary is not None and impact.summary.unjudgeable == {
        "an object the decision names is not kept (No such file or directory)": 2}


def test_an_envelope_rejected_at_the_baseline_is_skipped_by_a_profile_the_baseline_reads_alike(
        tmp_path: Path) -> None:
    log = logged(tmp_path, checks=((b"{", {}), (ENVELOPE, LANGUAGES)))
    shipped = Path(__file__).resolve().parents[1] / "ioa_semantic/data/profiles/cs-translation.ttl"
    revised = tmp_path / "revised.ttl"
    revised.write_text(shipped.read_text().replace(
        "iop:permittedDomain cs:ComputerScience ;", "iop:permittedDomain cs:ComputerScience, "
        "law:Law ;"))
    impact = Impact([log], Change(profile=str(revised)))
    assert list(impact) == []
    assert impact.summary is not None and impact.summary.rejudged == 1
    assert impact.summary.skipped == {"rejected before compatibility was evaluated, and what "
                                      "the baseline reads of the profile is unchanged": 1}


def test_a_profile_revised_in_trust_alone_touches_only_what_read_artifacts(
        tmp_path: Path) -> None:
    unaccepted = ENVELOPE.replace(b'"1.0"', b'"9.9"')
    log = logged(tmp_path, checks=((unaccepted, {}), (ENVELOPE, LANGUAGES)))
    shipped = Path(__file__).resolve().parents[1] / "ioa_semantic/data/profiles/cs-translation.ttl"
    trusting = tmp_path / "trusting.ttl"
    trusting.write_text(shipped.read_text().replace(
        "iop:trustedIssuer <https://example.org/mapping-authority> .",
        "iop:trustedIssuer <https://example.org/mapping-authority>, <https://example.org/b> ."))
    impact = Impact([log], Change(profile=str(trusting)))
    assert list(impact) == []
    assert impact.summary is not None and impact.summary.rejudged == 0
    # One read no artifact; the other read only the shipped one, whose issuer is trusted
    # by both revisions.
    assert sorted(impact.summary.skipped) == [
        "the profile differs only in the artifacts it accepts, and no artifact was read: "
        "the envelope's ontology version is not accepted",
        "the profile differs only in the artifacts it accepts, and none of those offered is "
        "of an issuer or a pin it treats otherwise"]
    distrusting = tmp_path / "distrusting.ttl"
    distrusting.write_text(shipped.read_text().replace("mapping-authority", "b"))
    impact = Impact([log], Change(profile=str(distrusting)))
    (flip,) = impact
    assert impact.summary is not None and impact.summary.rejudged == 1
    assert flip.transition == "compatible -> indeterminate"
    bumped = tmp_path / "bumped.ttl"
    bumped.write_text(shipped.read_text().replace('iop:revision "1"', 'iop:revision "2"'))
    impact = Impact([log], Change(profile=str(bumped)))
    assert list(impact) == [] and impact.summary is not None
    assert impact.summary.skipped == {
        "the profile differs only in what no decision reads (its revision)": 2}


def test_the_limits_a_decision_was_judged_under_are_logged_and_judged_under_again(
        tmp_path: Path) -> None:
    from ioa_semantic import Limits

    log = str(tmp_path / "d.jsonl")
    checker = Checker("cs-translation", limits=Limits(max_bytes=100), recorder=DecisionLog(log))
    assert checker.check(ENVELOPE, at=JUNE).verdict == "invalid"  # json.too-large
    impact = Impact([log], Change(at=datetime(2027, 1, 1, tzinfo=UTC)), everything=True)
    assert list(impact) == []
    assert impact.summary is not None and impact.summary.unchanged == 1


def test_the_instances_kept_for_judging_again_are_bounded_by_what_a_checker_can_hold() -> None:
    # Issue 40, item 3: a log of a million named instances is read in bounded memory; a
    # Checker holds at most INSTANCES pairs, so older entries cannot be in its memory.
    from ioa_semantic._checker import INSTANCES
    from ioa_semantic.impact.rejudge import Seen

    seen = Seen()
    for n in range(3 * INSTANCES + 5):
        seen.append((n.to_bytes(4, "big"), b""))
        assert len(seen.items) <= 2 * INSTANCES
    assert seen.end == 3 * INSTANCES + 5
    assert seen.since(seen.end - 2) == [((3 * INSTANCES + 3).to_bytes(4, "big"), b""),
                                        ((3 * INSTANCES + 4).to_bytes(4, "big"), b"")]
    assert len(seen.since(0)) == len(seen.items)  # from the start: what is still kept
