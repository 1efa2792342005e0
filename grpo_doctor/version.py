"""The installed version, for the reports' footers and ``--version``: a leaf, so that reporters
name it without importing the package's top (``grpo_doctor.__version__`` reads it too)."""

from __future__ import annotations


def package_version() -> str:
    """The version in the installed package's metadata (pyproject.toml's, one source)."""
    # Imported here: importlib.metadata is not free at start-up.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("grpo-doctor")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "0+unknown"
