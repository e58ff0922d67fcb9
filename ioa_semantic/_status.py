"""The exit statuses of every command, in one enum (contract, section 2, "Exit status").

A verdict's status and an audit's are derived here, not carried by the values they judge:
a Verdict is what a check found, and what a process returns is the command line's concern.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import enum

from ._findings import Verdict


class ExitStatus(enum.IntEnum):
    COMPATIBLE = 0  # every envelope compatible; an audit: every registration valid, no conflict
    INCOMPATIBLE = 1  # some incompatible, none worse; an audit: some invalid, or a conflict
    USAGE = 2  # usage or configuration error: nothing was checked
    INDETERMINATE = 3  # some indeterminate, none invalid
    INVALID = 4  # some envelope invalid (never used by audit)
    INTERNAL = 70  # a bug (or, for the Dask audit, a cluster that went away)
    ENVIRONMENT = 74  # the environment failed the run: disk full, an unwritable output

    @classmethod
    def of(cls, verdict: Verdict) -> "ExitStatus":
        """A check's status: the verdict's own."""
        return _OF_VERDICT[verdict]

    @classmethod
    def of_audit(cls, invalid: int, indeterminate: int, conflicts: int) -> "ExitStatus":
        """An audit's status: 1 for any invalid registration or conflict, else 3 for any
        indeterminate one, else 0."""
        if invalid or conflicts:
            return cls.INCOMPATIBLE
        return cls.INDETERMINATE if indeterminate else cls.COMPATIBLE


_OF_VERDICT = {
    Verdict.COMPATIBLE: ExitStatus.COMPATIBLE,
    Verdict.INCOMPATIBLE: ExitStatus.INCOMPATIBLE,
    Verdict.INDETERMINATE: ExitStatus.INDETERMINATE,
    Verdict.INVALID: ExitStatus.INVALID,
}
