"""Reward terms' roles: read from names, inferred from values (a [0, 1] term tracking the
held-out score is the task's correctness; a term at its maximum from early on beside it is
format), given by the user (--reward-role, [rewards]); `metrics` shows them and why."""

import numpy as np
import pandas as pd
import pytest

from grpo_doctor.config import DoctorConfig, Settings, load_settings, merge
from grpo_doctor.engine import diagnose, with_reward_roles
from grpo_doctor.errors import ConfigError
from grpo_doctor.rules.signals import role_and_reason
from grpo_doctor.store import build_run
from tests.helpers import run_cli

N = 150


def _run(*, heldout: bool = False, names=("mc_idx_reward", "think_format_reward")):
    """A format term that rises 0.1 -> 1.0 and carries the whole gain, and an answer term
    pinned near 0.05 that never moves (TRL's rewards/NAME/mean columns)."""
    rng = np.random.default_rng(0)
    steps = np.arange(1, N + 1)
    answer = np.clip(0.05 + rng.normal(0, 0.02, N), 0, 1)
    fmt = np.clip(0.1 + 0.9 * (1 - np.exp(-steps / 25)) + rng.normal(0, 0.02, N), 0, 1)
    frame = {"step": steps, f"rewards/{names[0]}/mean": answer,
             f"rewards/{names[1]}/mean": fmt, "reward": answer + fmt,
             "entropy": 0.8 - 0.001 * steps}
    if heldout:
        frame["eval_accuracy"] = np.clip(answer + rng.normal(0, 0.005, N), 0, 1)
    return build_run(pd.DataFrame(frame), name="roles", source="<test>", format="csv")


def test_a_term_known_by_name_only_is_other_until_its_role_is_given():
    run = _run()
    assert role_and_reason(run, "mc_idx_reward") == ("other",
                                                     "neither its name nor its values say")
    assert diagnose(run).check("format_gaming").status.value == "skipped"
    given = DoctorConfig(reward_roles={"mc_idx_reward": "correctness"})
    found = diagnose(run, given).check("format_gaming")
    assert found.fired and "format" in found.summary
    assert diagnose(run, given).config["reward_roles"] == {"mc_idx_reward": "correctness"}


@pytest.mark.parametrize("name", ["mc_idx_reward", "reward_component/mc_idx_reward",
                                  "rewards/mc_idx_reward/mean"])
def test_a_role_names_the_term_by_any_of_its_names(name):
    run = with_reward_roles(_run(), {name: "correctness"})
    assert role_and_reason(run, "mc_idx_reward") == ("correctness",
                                                     "given (--reward-role / [rewards])")


def test_a_role_for_a_term_the_run_does_not_log_is_a_note():
    run = with_reward_roles(_run(), {"accuracy_reward": "correctness"})
    assert run.reward_roles == {}
    assert any("accuracy_reward" in n and "mc_idx_reward" in n for n in run.notes)


def test_a_term_tracking_the_held_out_score_is_correctness_and_its_saturated_neighbour_format():
    rng = np.random.default_rng(1)
    steps = np.arange(1, N + 1)
    score = np.clip(0.1 + 0.6 * steps / N + rng.normal(0, 0.03, N), 0, 1)
    frame = pd.DataFrame({
        "step": steps, "rewards/mdi/mean": score,
        "rewards/bonus_b/mean": np.r_[np.linspace(0.2, 1, 15), np.ones(N - 15)],
        "reward": score + 1, "eval_accuracy": np.clip(score + rng.normal(0, 0.02, N), 0, 1)})
    run = build_run(frame, name="v", source="<test>", format="csv")
    role, why = role_and_reason(run, "mdi")
    assert role == "correctness" and why.startswith("it tracks the held-out score")
    role, why = role_and_reason(run, "bonus_b")
    assert role == "format" and why == "at its maximum from step 15 on, beside the task's term"
    # a flat term never tracks anything; without a held-out score nothing is inferred
    no_eval = build_run(frame.drop(columns="eval_accuracy"), name="v", source="<t>",
                        format="csv")
    assert role_and_reason(no_eval, "mdi")[0] == "other"
    assert role_and_reason(no_eval, "bonus_b")[0] == "other"


def test_rewards_table_and_the_option(tmp_path):
    cfg = tmp_path / "grpo-doctor.toml"
    cfg.write_text('[rewards]\ncorrectness = ["mc_idx_reward"]\nformat = "tags, xml_ok"\n')
    settings = load_settings(cfg)
    assert settings.reward_roles == {"mc_idx_reward": "correctness", "tags": "format",
                                     "xml_ok": "format"}
    merged = merge(settings, reward_roles=["other=tags", "cheat=no_hack"])
    assert merged.reward_roles["tags"] == "other" and merged.reward_roles["no_hack"] == "cheat"
    assert merged.doctor_config().reward_roles == merged.reward_roles
    with pytest.raises(ConfigError, match="unknown reward role 'answer'; roles: correctness"):
        merge(Settings(), reward_roles=["answer=x"])
    with pytest.raises(ConfigError, match="takes ROLE=NAME"):
        merge(Settings(), reward_roles=["correctness"])
    with pytest.raises(ConfigError, match="'x' is given two roles"):
        merge(Settings(), reward_roles=["correctness=x", "format=x"])
    cfg.write_text("rewards = 3\n")
    with pytest.raises(ConfigError, match=r"\[rewards\] must be a table"):
        load_settings(cfg)


def test_the_cli_takes_the_role_and_metrics_shows_why(capsys, tmp_path):
    path = tmp_path / "run.csv"
    frame = _run().frame.rename(columns=lambda c: c)  # canonical names, as a CSV may hold
    pd.DataFrame({"step": frame.index,
                  "rewards/mc_idx_reward/mean": frame["reward_component/mc_idx_reward"],
                  "rewards/think_format_reward/mean":
                      frame["reward_component/think_format_reward"],
                  "reward": frame["reward_mean"]}).to_csv(path, index=False)
    code, out, _ = run_cli(capsys, "metrics", str(path))
    assert code == 0 and "mc_idx_reward       other: neither its name nor its values say" in out
    code, out, _ = run_cli(capsys, "metrics", str(path), "--reward-role",
                           "correctness=mc_idx_reward")
    assert "mc_idx_reward       correctness: given (--reward-role / [rewards])" in out
    code, out, _ = run_cli(capsys, "diagnose", str(path), "--reward-role",
                           "correctness=mc_idx_reward", "-f", "json")
    import json

    doc = json.loads(out)
    gaming = next(c for c in doc["checks"] if c["mode"] == "format_gaming")
    assert gaming["status"] in ("warning", "critical")
    code, _, err = run_cli(capsys, "diagnose", str(path), "--reward-role", "bogus=x")
    assert code == 2 and "unknown reward role 'bogus'" in err
