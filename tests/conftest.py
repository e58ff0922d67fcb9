"""Hypothesis profiles: the suite is deterministic by default, so that a run of CI says the
same as the last one (a property test that drew a new input every run would make CI fail now
and then on a rare input, with nothing changed). ``pytest --hypothesis-profile=explore``
draws fresh inputs on every run, as ``bench/fuzz_report.py --seed N`` does for the fuzzer;
what they find becomes a case of its own (``tests/cases/fuzz``)."""

from hypothesis import settings

settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile("deterministic")
