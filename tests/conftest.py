"""Hypothesis profiles: the suite is deterministic by default, so that a run of CI says the
same as the last one (a property test that drew a new input every run would make CI fail now
and then on a rare input, with nothing changed). ``pytest --hypothesis-profile=explore``
draws fresh inputs on every run, as ``bench/fuzz_report.py --seed N`` does for the fuzzer;
what they find becomes a case of its own (``tests/cases/fuzz``).

The ``browser`` fixture: a real browser for the tests that look at a page (tests/browser.py).

An ``ioa-check trace`` run in the test process (``cli.main.main``) is bounded by
``--max-memory``, which bounds the whole process: after a few thousand tests, the test
process alone holds more than the 512 MiB default, and every such run would be refused
(``trace.memory-bound``) for what the tests before it left. In the test process the
default is 64 GiB (the bound's own tests give theirs, or run the command as a process,
where the default is the real one); a test marked ``default_memory_bound`` keeps it."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from browser import Browser, chromium, require_browser

# No deadline: a draw that takes longer on a busy machine is no failure (issue 35); bounded
# work is counted where it is claimed (tests/operations.py). Nor is input generation that
# does: HealthCheck.too_slow is a bound on the wall-clock time of the first draws (30 s
# without a deadline), the one health check a loaded machine can fail with nothing changed.
SLOW_DRAWS_ARE_NO_FAILURE = [HealthCheck.too_slow]
settings.register_profile("deterministic", derandomize=True, database=None, deadline=None,
                          suppress_health_check=SLOW_DRAWS_ARE_NO_FAILURE)
settings.register_profile("explore", derandomize=False, deadline=None,
                          suppress_health_check=SLOW_DRAWS_ARE_NO_FAILURE)
settings.load_profile("deterministic")


@pytest.fixture(autouse=True)
def _in_process_memory_bound(request: pytest.FixtureRequest,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("default_memory_bound") is None:
        from ioa_semantic.cli import trace

        monkeypatch.setattr(trace, "DEFAULT_MAX_MEMORY", 64 << 30)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    """Headless Chromium (tests/browser.py), its screenshots in the test's tmp_path; the
    test skips where Chromium or its driver is not installed, and fails so in CI."""
    require_browser()
    with chromium(tmp_path) as opened:
        yield opened
