"""Hypothesis profiles: the suite is deterministic by default, so that a run of CI says the
same as the last one (a property test that drew a new input every run would make CI fail now
and then on a rare input, with nothing changed). ``pytest --hypothesis-profile=explore``
draws fresh inputs on every run, as ``bench/fuzz_report.py --seed N`` does for the fuzzer;
what they find becomes a case of its own (``tests/cases/fuzz``).

The ``browser`` fixture: a real browser for the tests that look at a page (tests/browser.py)."""

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


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    """Headless Chromium (tests/browser.py), its screenshots in the test's tmp_path; the
    test skips where Chromium or its driver is not installed, and fails so in CI."""
    require_browser()
    with chromium(tmp_path) as opened:
        yield opened
