"""Impact before change (issue 40, draft S5): a log of decisions and what they read
(:mod:`.log`), a change and which decisions it can touch (:mod:`.change`), the touched
decisions judged again (:mod:`.rejudge`), and the same for an audit's registrations
(:mod:`.registrations`)."""

from .change import Change
from .log import FORMAT, DecisionLog, read_log
from .registrations import AnyFlip, ImpactRun, RegistrationFlip, RegistrationImpact
from .rejudge import Flip, Impact, Summary

__all__ = ["FORMAT", "AnyFlip", "Change", "DecisionLog", "Flip", "Impact", "ImpactRun",
           "RegistrationFlip", "RegistrationImpact", "Summary", "read_log"]
