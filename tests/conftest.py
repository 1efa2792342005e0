"""What every test module shares: the CLI as a fixture, the shared real runs, and a check that
CI's real runs are present when it says they are (tests/helpers.py holds the plain helpers)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import REAL_RUNS, run_cli

CliRunner = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> CliRunner:
    """``cli("diagnose", path, ...)`` runs the command in this process and returns
    (exit code, stdout, stderr)."""
    return lambda *args: run_cli(capsys, *args)


@pytest.fixture(scope="session")
def real_runs() -> Path:
    """The shared real runs folder; the test is skipped where it is absent."""
    if not REAL_RUNS.is_dir():
        pytest.skip("shared real runs not present")
    return REAL_RUNS


@pytest.fixture(autouse=True)
def _no_inherited_terminal_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reports wrap when COLUMNS says a width: a test that wants one sets it. One inherited
    from the environment would change what the others print (pytest-xdist's workers inherit
    COLUMNS=80 LINES=24: readline, imported by pytest, exports them in the controller)."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
