"""Impact before change (issue 40, draft S5): a log of decisions and what they read
(:mod:`.log`), a change and which decisions it can touch (:mod:`.change`), and the touched
decisions judged again (:mod:`.rejudge`)."""

from .change import Change
from .log import FORMAT, DecisionLog, read_log
from .rejudge import Flip, Impact, Summary

__all__ = ["FORMAT", "Change", "DecisionLog", "Flip", "Impact", "Summary", "read_log"]
