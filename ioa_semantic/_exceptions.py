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
    """A profile is unknown or its file is broken."""


class ArtifactError(ConfigurationError):
    """An alignment artifact cannot be read at all (a malformed one is excluded, not raised)."""


class RegistrationError(ConfigurationError):
    """A receiver's own capability registration cannot be read or is malformed."""
