"""The project's own errors. The CLI turns each into one line on stderr and exit code 2."""

from __future__ import annotations


class GrpoDoctorError(Exception):
    """Base class: anything grpo-doctor reports to the user as a one-line error."""


class InputError(GrpoDoctorError):
    """A path that does not exist, cannot be read, or holds no run."""


class FormatError(GrpoDoctorError):
    """A file that was read but is not in a format grpo-doctor understands."""


class ConfigError(GrpoDoctorError):
    """A bad option, column mapping or configuration file."""


class FetchError(GrpoDoctorError):
    """A failure talking to a remote tracker (credentials, unknown run, network)."""
