"""ioa-semantic: judge SemanticProfile envelopes of the Internet of Agents.

>>> from ioa_semantic import Checker
>>> checker = Checker("cs-translation")
>>> decision = checker.check(envelope_bytes)        # doctest: +SKIP
>>> decision.verdict                                # doctest: +SKIP
<Verdict.COMPATIBLE: 'compatible'>
"""

import gc as _gc

# The imports below allocate thousands of objects that live as long as the process; the
# collector's passes over them find nothing and cost a one-envelope command about 5 ms of
# its start-up (measured). The collector's previous state is restored after them.
_collecting = _gc.isenabled()
_gc.disable()
try:
    from ._checker import Checker, check
    from ._exceptions import (
        ArtifactError,
        ConfigurationError,
        IoaSemanticError,
        ProfileError,
        RegistrationError,
    )
    from ._expansion import ExpansionError, expand
    from ._findings import Decision, Finding, ProfileRef, Severity, Verdict
    from ._intake import Limits
    from ._version import __version__
finally:
    if _collecting:
        _gc.enable()

__all__ = [
    "ArtifactError",
    "Checker",
    "ConfigurationError",
    "Decision",
    "ExpansionError",
    "Finding",
    "IoaSemanticError",
    "Limits",
    "ProfileError",
    "ProfileRef",
    "RegistrationError",
    "Severity",
    "Verdict",
    "__version__",
    "check",
    "expand",
]
