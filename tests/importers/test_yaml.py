"""YAML side files (an MLflow meta.yaml, a SwanLab or wandb config.yaml) are read through one
safe loader: an alias bomb, a recursive anchor or a file past the size cap is refused in one
line (a note on the run), never expanded."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_doctor.errors import InputError
from grpo_doctor.importers import load_runs
from grpo_doctor.importers._common import YAML_MAX_ALIAS_NODES, load_yaml, read_yaml
from tests.importers.common import FIXTURES


def bomb(levels: int = 9, width: int = 9, key: str = "run_name") -> str:
    """A "billion laughs" document: ``width ** levels`` strings once its aliases expand."""
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    lines.append(f"{key}: *l{levels - 1}")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_fast():
    text = bomb()
    assert len(text) < 1024
    start = time.monotonic()
    with pytest.raises(InputError, match=r"^meta.yaml: not read \(its YAML aliases expand"):
        load_yaml(text, "meta.yaml")
    assert time.monotonic() - start < 1.0


def test_a_recursive_anchor_and_deep_nesting_are_one_line():
    with pytest.raises(InputError, match="holds itself"):
        load_yaml("a: &a [*a]\n", "x.yaml")
    with pytest.raises(InputError, match=r"^x.yaml: "):
        load_yaml("[" * 100_000 + "]" * 100_000, "x.yaml")
    with pytest.raises(InputError, match="not valid YAML"):
        load_yaml("a: [\n", "x.yaml")


def test_a_yaml_file_past_the_cap_is_not_read(tmp_path, monkeypatch):
    import grpo_doctor.importers._common as common

    path = tmp_path / "config.yaml"
    path.write_text("a: 1\n" * 100)
    monkeypatch.setattr(common, "YAML_MAX_BYTES", 100)
    with pytest.raises(InputError, match=r"not read \(a YAML file of 500 bytes"):
        read_yaml(path)


@settings(max_examples=60, deadline=None)
@given(levels=st.integers(1, 12), width=st.integers(1, 12))
def test_aliases_load_as_plain_data_up_to_the_bound(levels, width):
    text = bomb(levels, width)
    sizes = [1 + width]  # each level's nodes, expanded
    for _ in range(1, levels):
        sizes.append(1 + width * sizes[-1])
    expanded = 1 + sum(1 + n for n in sizes) + 1 + sizes[-1]  # the mapping, its keys, values
    distinct = 1 + 2 * levels + width + 2  # each level's key and list, the strings, run_name
    if expanded <= YAML_MAX_ALIAS_NODES:  # what a tracker may write: loaded
        assert load_yaml(text, "x") == yaml.safe_load(text)
    elif expanded - distinct > YAML_MAX_ALIAS_NODES:
        with pytest.raises(InputError, match="alias bomb"):
            load_yaml(text, "x")


def test_mlflow_run_meta_bomb_is_a_note_and_the_run_is_still_read(tmp_path):
    mlruns = tmp_path / "mlruns"
    shutil.copytree(FIXTURES / "mlflow" / "mlruns", mlruns)
    meta = next(p for p in mlruns.glob("*/*/meta.yaml") if "grpo-synthetic" in p.read_text())
    meta.write_text(meta.read_text().replace("run_name: grpo-synthetic\n", "") + bomb())
    start = time.monotonic()
    runs = load_runs(mlruns)
    assert time.monotonic() - start < 10
    run = next(r for r in runs if r.name == "grpo-synthetic")  # named by its runName tag
    assert any("alias bomb" in n and "the folder's name stands in" in n for n in run.notes)


@pytest.mark.parametrize("tracker", ["swanlab", "wandb"])
def test_config_yaml_bomb_is_a_note_and_the_metrics_are_read(tracker, tmp_path):
    if tracker == "swanlab":
        src = next((FIXTURES / "swanlab" / "swanlog").glob("run-*"))
    else:
        src = next((FIXTURES / "wandb" / "wandb").glob("offline-run-*"))
    folder = tmp_path / src.name
    shutil.copytree(src, folder)
    (folder / "files").mkdir(exist_ok=True)
    (folder / "files" / "config.yaml").write_text(bomb(key="learning_rate"))
    (run,) = load_runs(folder)
    assert len(run.frame) > 0
    assert any(n.startswith("config left out: ") and "alias bomb" in n for n in run.notes)


def test_every_yaml_read_goes_through_the_one_loader():
    package = Path(__file__).resolve().parents[2] / "grpo_doctor"
    users = sorted(p.relative_to(package).as_posix() for p in package.rglob("*.py")
                   if "import yaml" in p.read_text())
    assert users == ["importers/_common.py"]
