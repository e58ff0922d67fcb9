"""Fetch the W3C SHACL test suite that ``tests/test_shacl_suite.py`` runs.

The suite (w3c/data-shapes, ``core/`` and ``sparql/``) ships inside pySHACL's source
distribution on PyPI, under ``test/resources/sht_tests/``. This script downloads the sdist of
the installed pySHACL version with pip (the package registry, the one network access the
project's tooling makes) and extracts only ``sht_tests/`` into ``.cache/shacl-suite/`` (git
ignores it), so the tests themselves never touch the network and the suite's files are never
copied into the repository. The suite is taken from the installed version because the
expected figures of the test (passed, skipped by reason) are those of that pySHACL.

Run it after installing ``.[test]``::

    python tests/fetch_shacl_suite.py            # downloads the sdist with pip
    python tests/fetch_shacl_suite.py --sdist pyshacl-0.40.1.tar.gz   # an sdist at hand

It does nothing when the suite is already there; it exits non-zero, saying why, when it
cannot fetch or read it.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
from importlib import metadata
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "shacl-suite"
MEMBER = ("test", "resources", "sht_tests")


def suite_dir(version: str) -> Path:
    """Where the suite of a pySHACL version is kept (``<it>/manifest.ttl`` is its root)."""
    return CACHE / f"pyshacl-{version}" / "sht_tests"


def installed_version() -> str:
    try:
        return metadata.version("pyshacl")
    except metadata.PackageNotFoundError:
        raise SystemExit("fetch_shacl_suite: pySHACL is not installed; install '.[test]' "
                         "first") from None


def download(version: str, into: Path) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
               "--no-binary", ":all:", f"pyshacl=={version}", "--dest", str(into)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    archives = sorted(into.glob("pyshacl-*.tar.gz"))
    if done.returncode != 0 or not archives:
        raise SystemExit(f"fetch_shacl_suite: could not download the pySHACL {version} sdist "
                         f"({' '.join(command)}):\n{done.stderr.strip()}\n"
                         "Without network, pass --sdist with a copy of it, or set "
                         "IOA_SKIP_SHACL_SUITE=1 to run the tests without the suite.")
    return archives[0]


def extract(archive: Path, target: Path) -> int:
    """Write the sdist's ``sht_tests/`` files under ``target`` (regular files only, and only
    paths inside it); returns how many."""
    count = 0
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                parts = PurePosixPath(member.name).parts
                # pyshacl-X/test/resources/sht_tests/<rest>
                if len(parts) < 5 or parts[1:4] != MEMBER or not member.isfile():
                    continue
                rest = parts[4:]
                if any(p in ("", ".", "..") for p in rest):
                    continue
                handle = tar.extractfile(member)
                if handle is None:
                    continue
                path = target.joinpath(*rest)
                path.parent.mkdir(parents=True, exist_ok=True)
                with handle, path.open("wb") as out:
                    shutil.copyfileobj(handle, out)
                count += 1
    except (OSError, tarfile.TarError) as exc:
        raise SystemExit(f"fetch_shacl_suite: cannot read {archive}: {exc}") from None
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdist", type=Path,
                        help="a pySHACL sdist (.tar.gz) to extract instead of downloading one")
    args = parser.parse_args(argv)
    version = installed_version()
    target = suite_dir(version)
    if (target / "manifest.ttl").is_file():
        return 0
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as scratch:
        archive = args.sdist if args.sdist is not None else download(version, Path(scratch))
        staged = Path(scratch) / "sht_tests"
        count = extract(archive, staged)
        if not (staged / "manifest.ttl").is_file():
            raise SystemExit(f"fetch_shacl_suite: {archive} holds no test/resources/sht_tests/"
                             "manifest.ttl (is it a pySHACL sdist?)")
        target.parent.mkdir(parents=True, exist_ok=True)
        # One rename, so that an interrupted run never leaves a half suite that looks whole.
        staged.rename(target)
    where = target.relative_to(ROOT) if target.is_relative_to(ROOT) else target
    print(f"fetch_shacl_suite: {count} files of the W3C SHACL test suite (pySHACL {version}) "
          f"in {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
