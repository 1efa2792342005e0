"""Paths and expectations shared by the importer tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from grpo_doctor.store import Run

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

#: The canonical columns of the synthetic run written by scripts/make_fixtures_text.py.
CANONICAL = [
    "loss", "reward_mean", "reward_std", "kl", "entropy", "grad_norm", "learning_rate",
    "response_length_mean", "reward_component/format_reward",
]
NAN_STEP = 7  # kl was logged as NaN
GAP_STEP = 3  # grad_norm was not logged


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="")
    return path


def assert_synthetic(run: Run) -> None:
    """The run holds the synthetic run's NaN evidence and gap where they were written."""
    assert list(run.frame.index) == list(range(1, 13))
    assert list(run.nan_steps["kl"]) == [NAN_STEP]
    assert np.isnan(run.frame.loc[GAP_STEP, "grad_norm"])
    assert "grad_norm" not in run.nan_steps
