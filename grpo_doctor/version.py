"""The installed version (pyproject.toml's, through the package metadata: one source). A leaf:
reports stamp it without importing the package's facade (``grpo_doctor/__init__``)."""

from __future__ import annotations


def installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("grpo-doctor")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "0+unknown"
