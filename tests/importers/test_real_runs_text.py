"""The text importers on the shared real runs (skipped when ../shared/real-runs is absent)."""

import numpy as np
import pytest

from grpo_doctor.errors import GrpoDoctorError
from grpo_doctor.importers import detect_format, load_runs
from grpo_doctor.importers.console import parse_console
from tests.helpers import REAL_RUNS

pytestmark = pytest.mark.skipif(not REAL_RUNS.is_dir(), reason="shared real runs not present")


def _files(folder: str) -> list[str]:
    if not (REAL_RUNS / folder).is_dir():
        return []
    return sorted(f"{folder}/{p.name}" for p in (REAL_RUNS / folder).iterdir() if p.is_file())


VERL = {
    "reward_mean": "critic/score/mean", "entropy": "actor/entropy_loss", "kl": "critic/kl",
    "loss": "actor/pg_loss", "grad_norm": "actor/grad_norm", "learning_rate": "actor/lr",
    "response_length_mean": "response_length/mean", "clip_fraction": "actor/pg_clipfrac",
}
UNSLOTH = {"reward_mean": "reward", "reward_std": "reward_std", "kl": "kl", "loss": "Training Loss"}


@pytest.mark.parametrize("path", _files("verl-console"))
def test_verl_console(path):
    (run,) = load_runs(REAL_RUNS / path)
    assert run.format == "console"
    for canonical, source in VERL.items():
        assert run.mapping[canonical] == source
    assert run.first_step == 0 and run.n_steps > 100
    # actor/lr(1e-4):0.010 is 0.010 in units of 1e-4.
    np.testing.assert_allclose(run.frame["learning_rate"].dropna().iloc[0], 1e-6)
    assert run.config["actor_rollout_ref.actor.optim.lr"] == 1e-06
    assert run.config["algorithm.kl_ctrl.kl_coef"] == 0.001
    assert "heldout_score" in run.mapping


JUNCY = ["trl-console/20251022_120223_run_terminal.md",
         "trl-console/20251022_181457_run_terminal.md"]


@pytest.mark.parametrize("path", [p for p in _files("trl-console") if p in JUNCY])
def test_trl_console(path):
    (run,) = load_runs(REAL_RUNS / path)
    assert list(run.frame.index) == [10, 20, 30, 40]
    expected = {
        "reward_mean": "reward", "entropy": "entropy", "grad_norm": "grad_norm",
        "zero_std_fraction": "frac_reward_zero_std",
        "response_length_mean": "completions/mean_length",
        "reward_component/mc_idx_reward": "rewards/mc_idx_reward/mean",
    }
    for canonical, source in expected.items():
        assert run.mapping[canonical] == source
    if "181457" in path:  # the run that finished prints the closing summary dict
        assert run.summary["train_runtime"] > 0


# Steps as the real-runs README states them: (first, last, logged, how the steps were found).
TRL_STEPS = {
    # stdout buffered apart from tqdm's bar: the dicts come in batches long after their
    # bars, but tqdm cleared the bar at each step a dict was written (the closing summary,
    # runtime x steps/s = 200 steps over 40 dicts, agrees: one log every 5 steps).
    "nips-grpo-dynamics_exp1a_rho1.00_seed42.log": (5, 200, 40, "progress bar"),
    "nips-grpo-dynamics_exp1a_rho0.50_seed43.log": (5, 200, 40, "progress bar"),
    "nips-grpo-dynamics_exp2_vanilla_rho1.0_seed42.log": (5, 200, 40, "progress bar"),
    "nips-grpo-dynamics_gate2_rho0.70_seed43.log": (1, 200, 200, "progress bar"),
    # the bar advanced to step N before step N's dict; SFT dicts before GRPO are left out
    "SCU_TSC_docker_run.log": (5, 345, 69, "progress bar"),
    # timed out at step 73: no summary, the bars give the steps
    "round2_sclr_first_l3.txt": (1, 73, 73, "progress bar"),
    "round2_sclr_first_l2.txt": (1, 200, 200, "progress bar"),
}


@pytest.mark.parametrize("name", sorted(TRL_STEPS))
def test_trl_console_steps(name):
    if not (REAL_RUNS / "trl-console" / name).is_file():
        pytest.skip(f"{name} not present")
    (run,) = load_runs(REAL_RUNS / "trl-console" / name)
    first, last, logged, how = TRL_STEPS[name]
    assert (run.first_step, run.last_step, run.n_steps) == (first, last, logged)
    assert any(how in note for note in run.notes), run.notes
    if name.startswith("SCU"):
        assert any("supervised fine-tuning" in note for note in run.notes)
        assert "reward_mean" in run.mapping


@pytest.mark.parametrize("name", sorted(TRL_STEPS))
def test_trl_console_steps_of_a_log_still_being_written(name):
    """Any part of the log that ends with a dict line gives its dicts the steps the finished
    log gives them (what ``watch`` shows while the run goes on)."""
    path = REAL_RUNS / "trl-console" / name
    if not path.is_file():
        pytest.skip(f"{name} not present")
    data = path.read_bytes()
    (finished,) = load_runs(path)
    ends = [k + 1 for k in range(len(data)) if data[k] == 0x0A]
    dict_ends = [end for start, end in zip([0, *ends], ends) if b"{'" in data[start:end]]
    for end in dict_ends[::max(1, len(dict_ends) // 12)]:
        part = parse_console(data[:end].decode("utf-8", errors="replace"))
        if part.kind == "dict" and part.steps:
            assert part.steps == list(finished.frame.index[:len(part.steps)]), end


def test_two_trainings_in_one_log_are_two_runs():
    path = REAL_RUNS / "trl-console" / "RLDecisionAgent_train_grpo.log"
    if not path.is_file():
        pytest.skip("not present")
    first, second = load_runs(path)
    assert first.name.endswith("#1") and second.name.endswith("#2")
    # run 1: 20 steps, grad_norm nan on every log (the README); run 2: no summary of its own
    assert first.n_steps == 20 and len(first.nan_steps["grad_norm"]) == 20
    assert second.n_steps >= 20 and "grad_norm" not in second.nan_steps


@pytest.mark.parametrize("path", _files("notebooks"))
def test_notebooks_match_their_extracted_tables(path):
    (run,) = load_runs(REAL_RUNS / path)
    assert run.format == "notebook"
    for canonical, source in UNSLOTH.items():
        assert run.mapping[canonical] == source
    stem = path.split("/")[-1].removesuffix(".ipynb")
    tables = [p for p in _files("notebook-tables") if p.split("/")[-1].startswith(stem + "__")]
    for table in tables:
        (csv_run,) = load_runs(REAL_RUNS / table)
        if csv_run.frame.shape == run.frame.shape:
            np.testing.assert_array_equal(csv_run.frame.to_numpy(), run.frame.to_numpy())
            return
    pytest.fail(f"no notebook table matches {path}")


@pytest.mark.parametrize("path", _files("notebook-tables"))
def test_notebook_tables(path):
    assert detect_format(REAL_RUNS / path).name == "csv"
    (run,) = load_runs(REAL_RUNS / path)
    for canonical, source in UNSLOTH.items():
        assert run.mapping[canonical] == source
    length = run.mapping["response_length_mean"]
    assert length in ("completion_length", "completions / mean_length")
    sources = [run.mapping[c] for c in run.mapping if c.startswith("reward_component/")]
    assert all(s.startswith("rewards / ") for s in sources)
    # Every `rewards / <fn>` (or `rewards / <fn> / mean`) column is a reward component.
    assert not [c for c in run.unmapped if c.startswith("rewards / ") and not c.endswith("std")]


@pytest.mark.parametrize("path", _files("issue-snippets"))
def test_issue_snippets(path):
    try:
        runs = load_runs(REAL_RUNS / path)
    except GrpoDoctorError:
        return  # a paste without metric lines may fail, but only cleanly
    run = runs[0]
    assert run.n_steps >= 1 and run.mapping


@pytest.mark.parametrize("path,step,metric", [
    ("issue-snippets/verl-721_nan_step59.txt", 59, "grad_norm"),
    ("issue-snippets/agent-r1-30_nan_step83.txt", 83, "entropy"),
    ("issue-snippets/ms-swift-4465_kl_nan.txt", 300, "kl"),
    ("issue-snippets/open-r1-704_kl_nan_table.txt", 1, "kl"),
    ("issue-snippets/tinyzero-experiments_ppo3b_nan_crash_table.md", 90, "grad_norm"),
])
def test_issue_snippets_keep_nan_evidence(path, step, metric):
    if not (REAL_RUNS / path).is_file():
        pytest.skip(f"{path} not present")
    (run,) = load_runs(REAL_RUNS / path)
    assert step in run.nan_steps[metric]


def test_a_console_log_keeps_the_checkpoints_it_saved():
    """'Saving model checkpoint to .../checkpoint-100': what a roll-back can go back to."""
    from grpo_doctor.store import SAVED_CHECKPOINTS

    path = REAL_RUNS / "trl-console/nips-grpo-dynamics_exp1a_rho0.50_seed43.log"
    if not path.exists():
        pytest.skip("shared real runs not present")
    assert load_runs(path)[0].config[SAVED_CHECKPOINTS] == [100, 200]


def test_a_console_log_says_how_much_of_the_model_it_trains():
    """Transformers' "Number of trainable parameters = 161,480,704" and the model's Hub id
    (Qwen/Qwen2.5-7B-Instruct): 2% of the weights, a LoRA adapter, whose learning rate runs
    10x a full fine-tune's."""
    from grpo_doctor import recipe
    from grpo_doctor.store import MODEL_PARAMS, TRAINABLE_PARAMS

    path = REAL_RUNS / "trl-console/nips-grpo-dynamics_exp1a_rho1.00_seed42.log"
    if not path.exists():
        pytest.skip("shared real runs not present")
    config = load_runs(path)[0].config
    assert config[TRAINABLE_PARAMS] == 161_480_704 and config[MODEL_PARAMS] == 7e9
    assert recipe.read_config(config).lora


def test_a_trainer_output_folder_keeps_its_checkpoints(tmp_path):
    """checkpoint-N folders beside the one read are what a roll-back can reach."""
    import shutil

    from grpo_doctor.store import SAVED_CHECKPOINTS
    from tests.helpers import CORPUS

    state = CORPUS / "26_too_easy_exact_only" / "checkpoint-200" / "trainer_state.json"
    for n in (50, 200):
        (tmp_path / f"checkpoint-{n}").mkdir()
        shutil.copy(state, tmp_path / f"checkpoint-{n}" / "trainer_state.json")
    (tmp_path / "checkpoint-x").mkdir()  # not a checkpoint
    assert load_runs(tmp_path)[0].config[SAVED_CHECKPOINTS] == [50, 200]
    assert load_runs(tmp_path / "checkpoint-50")[0].config[SAVED_CHECKPOINTS] == [50, 200]
