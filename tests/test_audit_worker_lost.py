"""A worker of ``audit --jobs N`` killed mid-run (by an operator, or the system out of
memory) ends the audit with exit status 74 and one line saying so: the environment failed
the run, not the input (contract, exit status 74). multiprocessing.Pool, which judged the
pieces before, replaced the dead worker and waited forever for the piece it held.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from support import IOA_CHECK, children, write_registrations


def test_a_killed_worker_ends_the_audit_with_74_and_no_output_passed_off_as_complete(
        tmp_path: Path) -> None:
    # Enough registrations that the workers are still judging when one is killed: about
    # 120 pieces of 512 KiB, seconds of work even for the compiled build.
    write_registrations(tmp_path / "r.jsonl", 200_000)
    proc = subprocess.Popen([IOA_CHECK, "audit", "r.jsonl", "--profile", "cs-translation",
                             "--format", "json", "--jobs", "2", "--output", "out.jsonl"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        workers: list[int] = []
        while not workers and proc.poll() is None:
            workers = children(proc.pid)
        assert workers, "the audit ended before its workers could be seen"
        os.kill(workers[0], signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=300)  # a Pool never returned here
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, stdout) == (74, b""), stderr.decode()
    assert stderr.decode().strip().splitlines() == [
        "ioa-check: a worker process ended before its work was done (killed, or the system "
        "out of memory); the audit did not finish"]
    assert not (tmp_path / "out.jsonl").exists()
