"""Building runs from arrays for tests, and where the shared real runs live."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from grpo_doctor.findings import Diagnosis
from grpo_doctor.store import Run, build_run

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "fixtures" / "corpus"
REAL_RUNS = Path(os.environ.get("GRPO_DOCTOR_REAL_RUNS", REPO.parent / "shared" / "real-runs"))
if os.environ.get("GRPO_DOCTOR_REQUIRE_REAL_RUNS") == "1" and not REAL_RUNS.is_dir():
    # CI sets this when the real runs are beside the checkout: never skip them silently.
    raise RuntimeError(f"GRPO_DOCTOR_REQUIRE_REAL_RUNS=1 but {REAL_RUNS} is not a folder")


def make_run(steps: np.ndarray | None = None, name: str = "test", **columns: np.ndarray) -> Run:
    """A Run from raw columns (framework names allowed), steps 1..n unless given."""
    n = len(next(iter(columns.values())))
    frame = pd.DataFrame({k.replace("__", "/"): np.asarray(v) for k, v in columns.items()})
    return build_run(frame, name=name, source=f"<{name}>", format="test",
                     steps=np.arange(1, n + 1) if steps is None else steps)


@functools.cache
def corpus_diagnosis(run: str) -> Diagnosis:
    """The default diagnosis of a corpus run (``run``: its path under tests/fixtures/corpus),
    made once per test process: several modules read the same ones, the suite's dearest."""
    from grpo_doctor.engine import diagnose
    from grpo_doctor.importers import load_runs

    return diagnose(load_runs(CORPUS / run)[0])


def ar1(seed: int, n: int, sigma: float, rho: float = 0.6) -> np.ndarray:
    """AR(1) noise: what real training curves look like between their trends."""
    rng = np.random.default_rng(seed)
    e = rng.normal(0, sigma, n)
    out = np.empty(n)
    out[0] = e[0]
    for i in range(1, n):
        out[i] = rho * out[i - 1] + e[i]
    return out


def remove_tree(top: Path) -> None:
    """``shutil.rmtree`` without recursion: it recurses once per level, so a tree 1,000 folders
    deep (a bad-input case) would end in a RecursionError and be left behind."""
    stack, names = [os.open(top, os.O_RDONLY)], [""]
    while stack:
        fd = stack[-1]
        child = None
        for entry in os.scandir(fd):
            if entry.is_dir(follow_symlinks=False):
                child = entry.name
                break
            os.unlink(entry.name, dir_fd=fd)
        if child is not None:
            stack.append(os.open(child, os.O_RDONLY, dir_fd=fd))
            names.append(child)
            continue
        os.close(stack.pop())
        name = names.pop()
        if stack:
            os.rmdir(name, dir_fd=stack[-1])
    os.rmdir(top)


def workflow_commands(text: str) -> list[str]:
    """The lines a GitHub Actions runner would read as workflow commands: '::name ...' at a
    line's start (after spaces), '##[' anywhere, outside a '::stop-commands::TOKEN' stretch."""
    import re

    found, token = [], None
    for line in text.split("\n"):
        stripped = line.lstrip()
        if token is not None:
            token = None if stripped == f"::{token}::" else token
            continue
        if m := re.match(r"::stop-commands::(\S+)", stripped):
            token = m.group(1)
            continue
        if stripped.startswith("::") or "##[" in line:
            found.append(line)
    return found


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run the CLI in this process: (exit code, stdout, stderr). The ``cli`` fixture
    (conftest.py) wraps it."""
    from grpo_doctor.cli import main

    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def shown_as(label: str, name: str) -> bool:
    """``label`` is a recognisable showing of ``name``: the name itself, or ``head…tail`` with
    ``head`` a start of the name and ``tail`` an end of it (either may be empty, not both),
    together shorter than the name, and one of them at least 8 characters (a word or two a
    reader knows the run by, not ``…e0`` or ``g…``)."""
    if label == name:
        return True
    if label.count("…") != 1:
        return False
    head, tail = label.split("…")
    return (name.startswith(head) and name.endswith(tail) and len(head) + len(tail) < len(name)
            and max(len(head), len(tail)) >= 8)


def names_told_apart(labels: list[str], names: list[str]) -> bool:
    """Each label is unique and shows its own name and no other."""
    return len(set(labels)) == len(labels) and all(
        [shown_as(label, other) for other in names] == [other == name for other in names]
        for label, name in zip(labels, names))
