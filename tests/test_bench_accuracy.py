"""`python bench/accuracy.py` finds the real runs where the tests find them, and says so when
they are not there (it used to drop them without a word)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from grpo_doctor.api import example_path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "accuracy.py"
#: A path bench/real_runs_labels.json labels healthy.
HEALTHY_LABEL = "verl-console/Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538.log"


def _accuracy(tmp_path, real_runs, *args):
    corpus = tmp_path / "no-corpus"
    corpus.mkdir(exist_ok=True)
    env = {**os.environ, "GRPO_DOCTOR_REAL_RUNS": str(real_runs)}
    p = subprocess.run([sys.executable, str(BENCH), "--corpus", str(corpus), *args],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_missing_real_runs_are_named_in_one_line(tmp_path):
    missing = tmp_path / "nowhere"
    out = _accuracy(tmp_path, missing)
    lines = [line for line in out.splitlines() if "real runs not found" in line]
    assert lines == [f"real runs not found at {missing} (set GRPO_DOCTOR_REAL_RUNS or --real): "
                     "scoring the corpus only"]


def test_the_real_runs_folder_comes_from_the_environment(tmp_path):
    """A stand-in folder (a generated healthy run under a labeled name) is scored when
    GRPO_DOCTOR_REAL_RUNS names it."""
    real = tmp_path / "real-runs"
    (real / HEALTHY_LABEL).parent.mkdir(parents=True)
    shutil.copy(example_path("healthy"), real / HEALTHY_LABEL)
    out = _accuracy(tmp_path, real)
    assert "real runs not found" not in out and "healthy runs called: healthy 1" in out
