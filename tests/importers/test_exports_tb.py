"""TensorBoard scalar CSV downloads."""

import pytest

from grpo_doctor.errors import FormatError
from grpo_doctor.importers import LoadOptions, detect_format, load_runs
from grpo_doctor.importers.exports_tb import IMPORTER, recover_tag
from tests.importers.common import FIXTURES, write

FOLDER = FIXTURES / "tensorboard-csv" / "synthetic"


@pytest.mark.parametrize("name,tag", [
    ("train_completions_mean_length", "train/completions/mean_length"),
    ("train_rewards_format_reward_mean", "train/rewards/format_reward/mean"),
    ("critic_score_mean", "critic/score/mean"),
    ("train_reward_std", "train/reward_std"),
    ("actor_entropy", "actor/entropy"),
    ("my_custom_thing", "my_custom_thing"),
    ("already/slashed_name", "already/slashed_name"),
])
def test_recover_tag(name, tag):
    assert recover_tag(name) == tag


def test_single_file_is_a_one_metric_run():
    (run,) = load_runs(FOLDER / "run-synthetic-tag-train_kl.csv")
    assert run.name == "synthetic"
    assert list(run.mapping) == ["kl"] and list(run.nan_steps["kl"]) == [7]


def test_folder_with_several_runs(tmp_path):
    for run in ("a", "b"):
        write(tmp_path / f"run-{run}-tag-train_reward.csv",
              "Wall time,Step,Value\n1.0,1,0.5\n2.0,2,0.6\n2.5,2,0.7\n")
    write(tmp_path / "notes.csv", "x,y\n1,2\n")
    assert detect_format(tmp_path).name == "tensorboard-csv"
    runs = load_runs(tmp_path)
    assert [r.name for r in runs] == ["a", "b"]
    assert runs[0].frame.loc[2, "reward_mean"] == 0.7  # a repeated step keeps the last value
    assert any("repeated (step, metric)" in n for n in runs[0].notes)


def test_folder_without_tensorboard_csv(tmp_path):
    write(tmp_path / "notes.csv", "x,y\n1,2\n")
    assert IMPORTER.sniff(tmp_path, b"") == 0
    with pytest.raises(FormatError, match="no TensorBoard CSV"):
        IMPORTER.load(tmp_path, LoadOptions())


def test_sniff_header():
    path = FOLDER / "run-synthetic-tag-train_loss.csv"
    assert IMPORTER.sniff(path, path.read_bytes()) == 90
    assert IMPORTER.sniff(FOLDER, b"") == 90
