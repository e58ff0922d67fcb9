"""``--log``: the decision log's objects folder is never written through a symbolic link.

A review linked ``LOG.objects`` (and one of its two-digit folders) to a folder of the user's:
each check wrote its envelope there. Now a linked objects folder refuses the log before any
check (exit 2), and a linked two-digit folder put there later refuses the write (exit 74),
the folder it names left as it was.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from support import IOA_CHECK

ENVELOPE = Path(__file__).resolve().parent.parent / "examples" / "envelope-6.2.jsonld"


def _check(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([IOA_CHECK, str(ENVELOPE), "--profile", "cs-translation", "--at",
                           "2026-06-01T00:00:00Z", "--log", "lg"], cwd=cwd, capture_output=True,
                          text=True, timeout=60)


def test_a_linked_objects_folder_refuses_the_log(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    os.symlink("mine", tmp_path / "lg.objects")
    proc = _check(tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "is a symbolic link" in proc.stderr and "Traceback" not in proc.stderr
    assert list((tmp_path / "mine").iterdir()) == []
    assert not (tmp_path / "lg").exists()


def test_a_linked_folder_within_the_objects_is_not_written_through(tmp_path: Path) -> None:
    digest = hashlib.sha256(ENVELOPE.read_bytes()).hexdigest()
    (tmp_path / "mine").mkdir()
    (tmp_path / "lg.objects").mkdir()
    os.symlink(tmp_path / "mine", tmp_path / "lg.objects" / digest[:2])
    proc = _check(tmp_path)
    assert proc.returncode == 74, proc.stderr
    assert "symbolic link" in proc.stderr and "Traceback" not in proc.stderr
    assert list((tmp_path / "mine").iterdir()) == []


def test_a_log_of_its_own_keeps_the_envelope(tmp_path: Path) -> None:
    assert _check(tmp_path).returncode == 0
    digest = hashlib.sha256(ENVELOPE.read_bytes()).hexdigest()
    assert (tmp_path / "lg.objects" / digest[:2] / digest).read_bytes() == ENVELOPE.read_bytes()


def test_a_link_put_in_place_of_the_objects_folder_after_the_log_is_opened_makes_nothing(
        tmp_path: Path) -> None:
    """The service opens its log once: a link put at LOG.objects afterwards refuses the
    write, and nothing is made in the folder it names (a two-digit folder was)."""
    from ioa_semantic import Checker
    from ioa_semantic.impact.log import DecisionLog

    log = DecisionLog(str(tmp_path / "lg"))
    checker = Checker("cs-translation", recorder=log)
    (tmp_path / "mine").mkdir()
    os.symlink(tmp_path / "mine", tmp_path / "lg.objects")
    from datetime import UTC, datetime

    from ioa_semantic._exceptions import WriteFailed

    with pytest.raises(WriteFailed):
        checker.check(ENVELOPE.read_bytes(), at=datetime(2026, 6, 1, tzinfo=UTC))
    assert list((tmp_path / "mine").iterdir()) == []
