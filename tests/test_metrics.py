from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from grpo_doctor.metrics import Metric, map_columns, normalize_key
from grpo_doctor.store import build_run


def mapping(cols, user=None):
    return map_columns(cols, user).mapping


def test_normalize_key_folds_prefix_spaces_and_case():
    assert normalize_key("train/rewards / format_reward / mean") == "rewards/format_reward/mean"
    assert normalize_key("Training Loss") == "training_loss"
    assert normalize_key("train/global_step") == "global_step"


def test_trl_names_map():
    m = mapping(["train/reward", "train/reward_std", "train/entropy", "train/kl",
                 "train/frac_reward_zero_std", "train/completions/mean_length",
                 "train/rewards/format_reward/mean", "train/rewards/format_reward/std"])
    assert m["reward_mean"] == "train/reward"
    assert m["entropy"] == "train/entropy"
    assert m["zero_std_fraction"] == "train/frac_reward_zero_std"
    assert m["response_length_mean"] == "train/completions/mean_length"
    assert m["reward_component/format_reward"] == "train/rewards/format_reward/mean"
    assert "train/rewards/format_reward/std" not in m.values()


def test_verl_names_and_old_versions_map():
    m = mapping(["critic/score/mean", "actor/entropy_loss", "critic/kl", "actor/grad_norm",
                 "actor/pg_clipfrac", "response_length/clip_ratio", "actor/lr"])
    assert m["reward_mean"] == "critic/score/mean"
    assert m["entropy"] == "actor/entropy_loss"
    assert m["kl"] == "critic/kl"
    assert m["clip_fraction"] == "actor/pg_clipfrac"
    assert m["truncation_ratio"] == "response_length/clip_ratio"


def test_traps_truncation_is_not_clip_fraction_and_is_ratio_is_not_ppo_ratio():
    m = mapping(["train/completions/clipped_ratio", "train/sampling/importance_sampling_ratio/max",
                 "agent_loop/tool_calls/mean"])
    assert m.get("truncation_ratio") == "train/completions/clipped_ratio"
    assert "clip_fraction" not in m
    assert m.get("is_ratio_max") == "train/sampling/importance_sampling_ratio/max"
    assert "ratio_max" not in m
    assert "tool_calls" not in m  # seconds, not counts


def test_nemo_percent_conversion_and_proxy():
    frame = pd.DataFrame({"train/baseline_reward/pct_mixed": [40.0, 25.0],
                          "train/approx_entropy": [1.2, 1.1]})
    run = build_run(frame, name="n", source="n", format="t", steps=[1, 2])
    assert np.allclose(run.frame["zero_std_fraction"], [0.6, 0.75])
    assert np.allclose(run.frame["entropy"], [1.2, 1.1])
    assert np.allclose(run.frame["log_prob_mean"], [-1.2, -1.1])
    assert "log_prob_mean" in run.proxies and "approx_entropy" in run.proxies["log_prob_mean"]


def test_first_alias_wins_and_the_rest_stay_unmapped():
    cm = map_columns(["actor/entropy", "actor/entropy_loss"])
    assert cm.mapping["entropy"] == "actor/entropy"
    assert "actor/entropy_loss" in cm.unmapped


def test_user_map_wins_over_aliases():
    m = mapping(["train/entropy", "my/ent"], {"entropy": "my/ent"})
    assert m["entropy"] == "my/ent"


def test_effective_ratio_becomes_zero_std_fraction():
    frame = pd.DataFrame({"effective_group_ratio": [0.8, 0.3]})
    run = build_run(frame, name="e", source="e", format="t", steps=[1, 2])
    assert np.allclose(run.frame[Metric.ZERO_STD_FRACTION.value], [0.2, 0.7])


@pytest.mark.parametrize("col", ["Step", "_step", "global_step", "train/global_step",
                                 "trainer/global_step", "training/global_step",
                                 "system/global_step"])
def test_step_column_detected(col):
    frame = pd.DataFrame({col: [10, 20, 30], "kl": [0.1, 0.2, 0.3]})
    run = build_run(frame, name="s", source="s", format="t")
    assert list(run.steps) == [10, 20, 30]
    assert run.step_source == col


def test_heldout_prefers_the_column_evaluated_most_often():
    cm = map_columns(["test_score/openai/gsm8k", "val/test_score/openai/gsm8k"], None,
                     {"test_score/openai/gsm8k": 1, "val/test_score/openai/gsm8k": 44})
    assert cm.mapping["heldout_score"] == "val/test_score/openai/gsm8k"


def test_total_is_not_a_component_and_names_keep_their_case():
    cm = map_columns(["rewards/total_reward", "rewards/ToolAccuracy/mean"])
    assert cm.mapping["reward_mean"] == "rewards/total_reward"
    assert cm.mapping["reward_component/ToolAccuracy"] == "rewards/ToolAccuracy/mean"


def test_metrics_header_keeps_the_path_whole_on_a_line_at_80_columns(cli, real_runs,
                                                                       monkeypatch):
    """The header wrapped, then showed only `…raining_metrics.csv` on an empty line."""
    # A relative path of a known length (an absolute one depends on where the checkout is):
    # too long to share the header's line, short enough for a line of its own.
    monkeypatch.chdir(real_runs.parent)
    path = Path(real_runs.name) / "csv" / "ppo-vs-grpo-math-rlvr_four_run_training_metrics.csv"
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli("metrics", str(path))
    lines = out.splitlines()
    assert code == 0 and max(len(line) for line in lines) <= 80
    heads = [i for i, line in enumerate(lines) if line.startswith("run ")]
    assert len(heads) == 4
    for i in heads:  # the path whole on a line of its own
        assert lines[i].endswith(" (csv) from") and lines[i + 1] == f"  {path}"
    assert not any(line.lstrip().startswith("…") and " " not in line.strip() and
                   "metrics.csv" not in line for line in lines)


def test_metrics_rows_hang_under_their_text_and_never_split_a_count(cli, real_runs,
                                                                    monkeypatch):
    """Wrapped rows fell back to column 4 and split "(39 values)" across lines."""
    path = next((real_runs / "tensorboard").glob("events*"))
    for columns in (80, 60):
        monkeypatch.setenv("COLUMNS", str(columns))
        code, out, _ = cli("metrics", str(path))
        lines = out.splitlines()
        assert code == 0 and max(len(line) for line in lines) <= columns
        assert not any(line.rstrip().endswith("(39") or line.strip() == "values)"
                       for line in lines)
        rows = out.split("canonical metric -> source column\n", 1)[1].split("  unmapped")[0]
        for line in rows.splitlines():  # a continuation hangs beyond the name's column 4
            assert line.startswith("    ") and (not line.startswith("     ")
                                                or line.startswith("      ")), line
        assert path.name in out  # the header keeps the file name whole
    monkeypatch.setenv("COLUMNS", "80")
    _, out, _ = cli("metrics", str(path))
    assert "    response_length_mean                  <- train/completion_length\n" \
           "                                             (39 values)" in out
