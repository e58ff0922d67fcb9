"""A folder that is not a trace store of ioa-check is refused before anything in it changes.

A folder with a ``CURRENT`` file was opened for writing first and checked after: RocksDB
rewrote its manifest and log, and the store's open removed its info logs and chunk-named
files, so another program's Oxigraph store, or any folder holding a file of that name, was
changed by the very command that refused it. It is now read read-only first.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pyoxigraph
import pytest
from test_trace import GOLDEN
from test_trace_store import AT, ioa


def _contents(folder: Path) -> dict[str, str]:
    """Every file's name and digest, and every name's kind: what a byte-for-byte check sees."""
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root, name)
            found[str(path.relative_to(folder))] = (
                hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "folder")
    return found


def _another_programs_store(folder: Path) -> None:
    store = pyoxigraph.Store(str(folder))
    store.add(pyoxigraph.Quad(pyoxigraph.NamedNode("http://me/a"),
                              pyoxigraph.NamedNode("http://me/p"), pyoxigraph.Literal("mine")))
    store.flush()
    del store
    (folder / "bulk-7.sst").write_text("precious")
    (folder / "LOG.old.123").write_text("mine")


@pytest.mark.parametrize("command", [
    ["trace", GOLDEN, "--no-shapes", "--at", AT, "--store"],
    ["trace", "query", "runs"], ["trace", "reaudit"]], ids=["feed", "query", "reaudit"])
def test_another_programs_oxigraph_store_is_refused_unchanged(tmp_path: Path,
                                                              command: list[object]) -> None:
    folder = tmp_path / "oxi"
    _another_programs_store(folder)
    before = _contents(folder)
    # A feed names the folder last; query and reaudit after their own names (query DIR NAME).
    args = [*command, folder] if command[-1] == "--store" else [*command[:2], folder,
                                                                *command[2:]]
    proc = ioa(args, tmp_path)
    assert proc.returncode == 2, proc.stderr
    message = proc.stderr.decode()
    assert "not a trace store of ioa-check" in message and "nothing in it was changed" in message
    assert _contents(folder) == before


def test_a_users_folder_with_a_current_file_is_refused_unchanged(tmp_path: Path) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "CURRENT").write_text("current task\n")
    (folder / "LOG").write_text("my build log\n")
    before = _contents(folder)
    proc = ioa(["trace", GOLDEN, "--no-shapes", "--at", AT, "--store", folder], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "is not a trace store" in proc.stderr.decode()
    assert _contents(folder) == before


def test_a_damaged_store_is_the_environments_failure_not_another_folder(tmp_path: Path) -> None:
    """A store whose manifest is gone cannot be opened: it is damaged (74), never said to be
    no store (which invites deleting a history); nothing in it is changed."""
    folder = tmp_path / "st"
    _another_programs_store(folder)
    for name in os.listdir(folder):
        if name.startswith("MANIFEST-"):
            os.remove(folder / name)
    before = _contents(folder)
    proc = ioa(["trace", "query", folder, "runs"], tmp_path)
    assert proc.returncode == 74, proc.stderr
    assert "is damaged" in proc.stderr.decode()
    assert _contents(folder) == before


def test_a_folder_that_cannot_be_listed_is_the_environments_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder that may be searched but not listed (mode 711 to another user): its listing,
    asked to tell a damaged store from another folder, failed with a traceback (exit 70)."""
    from ioa_semantic.trace import store
    from ioa_semantic.trace.store_errors import StoreUnavailable

    folder = tmp_path / "st"
    folder.mkdir()
    (folder / "CURRENT").write_text("not RocksDB's\n")

    def unlisted(path: object) -> list[str]:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr("ioa_semantic.trace.store.os.listdir", unlisted)
    with pytest.raises(StoreUnavailable, match="Permission denied"):
        store._held_to_be_ours(str(folder))
