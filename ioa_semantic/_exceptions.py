"""Exceptions about the tool, never about the input.

Input problems are findings. An exception here means the checker could not be set up or
could not run: an unknown profile, a broken profile file, an unreadable capability file.
Foreign errors (pyld, pyoxigraph, jsonschema) are mapped to these at one boundary each.
"""

from __future__ import annotations


class IoaSemanticError(Exception):
    """Root of every error the library raises on purpose."""


class ConfigurationError(IoaSemanticError):
    """The checker cannot be configured as asked (exit status 2 on the command line)."""


class ProfileError(ConfigurationError):
    """A profile is unknown or its file is broken. ``problems`` lists each problem on its
    own (a profile read strictly may have several); the message names them all."""

    def __init__(self, message: str, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems or (message,)


class ArtifactError(ConfigurationError):
    """An alignment artifact cannot be read at all (a malformed one is excluded, not raised)."""


class RegistrationError(ConfigurationError):
    """A receiver's own capability registration cannot be read or is malformed."""


class SigningKeyError(ConfigurationError):
    """A signing key file cannot be read, or holds no Ed25519 private key."""


class EnvironmentFailure(IoaSemanticError):
    """The environment failed the run, not the input or the tool: a file that cannot be
    written, a port that cannot be listened on (exit status 74 on the command line)."""


# The name a failure to write standard output gives it (the command line says it so).
STANDARD_OUTPUT = "standard output"


class WriteFailed(EnvironmentFailure):
    """A file a command writes (an output, an audit's state or journal, a key) could not be
    written: the disk is full, the folder is missing or read-only. ``name`` is the file, or
    :data:`STANDARD_OUTPUT`."""

    def __init__(self, name: str, error: OSError) -> None:
        super().__init__(f"cannot write {name}: {error.strerror or error}")
        self.name = name
        self.error = error


class WorkerLost(EnvironmentFailure):
    """A worker process of ``audit --jobs N`` ended before its work was done: killed (by an
    operator, or the system out of memory). The audit did not finish (exit status 74 on the
    command line), and nothing it wrote is passed off as complete."""


class ClusterStopped(IoaSemanticError):
    """An audit on a Dask cluster could not finish: the cluster went away (the scheduler
    lost, the connection closed). Neither a verdict nor a bug of the input's: exit status
    70 on the command line, with no verdict."""


class RetrievalError(IoaSemanticError):
    """A resource was not retrieved; ``code`` is the ``retrieval.*`` reason."""

    def __init__(self, code: str, url: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.url = url
        self.message = message


def retrieval_error_in(exc: BaseException) -> RetrievalError | None:
    """The :class:`RetrievalError` behind ``exc``, if any.

    pyld wraps a loader's exception in a ``JsonLdError`` (``raise ... from cause``, and in
    places ``details['cause']``), possibly several times, and the expansion stage wraps that
    again; this follows every such link.
    """
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, RetrievalError):
            return current
        details = getattr(current, "details", None)
        if isinstance(details, dict) and isinstance(details.get("cause"), BaseException):
            pending.append(details["cause"])
        pending.extend(link for link in (current.__context__, current.__cause__) if link is not None)
    return None
