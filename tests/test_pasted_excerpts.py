"""Shapes of logs pasted in public threads that trial 62 found misread or misadvised.

Every log here is written by the test, in the shape the trial's excerpt had (the excerpts
themselves stay out of the repository): a dict a terminal hard-wrapped inside a key, an
evaluation dict with unprefixed keys, a progress bar on the dict's own line, a Ray console
whose first line holds commas, a gradient norm in the billions at the first update, a NaN
reward std beside a finite reward, a KL far from 0 at step 1.
"""

from __future__ import annotations

import numpy as np
import pytest

from grpo_doctor.config import DoctorConfig
from grpo_doctor.engine import diagnose
from grpo_doctor.errors import FormatError
from grpo_doctor.importers import load_runs
from grpo_doctor.store import Run
from tests.helpers import make_run, run_cli


def _wrap(text: str, width: int) -> str:
    """``text`` as a terminal of ``width`` columns shows it: cut every ``width`` characters."""
    return "\n".join(text[i:i + width] for i in range(0, len(text), width))


def _trl_dict(step: int, reward_std: str = "0.31") -> str:
    return ("{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 0.0, 'completion_length': "
            f"250.6, 'rewards/soft_format_reward_func': 0.479, 'rewards/strict_format_reward_"
            f"func': 0.0, 'rewards/correctness_reward_func': 0.0, 'reward': 0.216, "
            f"'reward_std': {reward_std}, 'kl': 0.0, 'clip_ratio': 0.0, 'epoch': "
            f"{step / 100:.2f}}}")


def test_a_dict_a_terminal_wrapped_inside_a_key_is_read_whole(tmp_path):
    """The wrap fell inside 'rewards/strict_format_re' / 'ward_func' and inside 'k' / 'l':
    the dict had ended at the first break, its reward and NaN reward std lost."""
    text = _trl_dict(1, "nan")
    width = 97
    assert "{" not in text[width:]  # the shape: the wrapped lines open no dict of their own
    log = tmp_path / "pasted.log"
    log.write_text("UserWarning: std(): degrees of freedom is <= 0.\n\n"
                   + _wrap(text, width) + "\n" + _trl_dict(2, "nan") + "\n")
    run = load_runs(log)[0]
    assert run.n_steps == 2
    assert run.frame["reward_mean"].iloc[0] == 0.216
    assert "reward_std" in run.nan_steps and len(run.nan_steps["reward_std"]) == 2
    assert "reward_component/strict_format_reward_func" in run.frame.columns
    assert run.frame["kl"].notna().all()


def test_lines_of_another_width_after_an_open_dict_are_not_joined_to_it(tmp_path):
    """Only a hard wrap joins: a dict cut off by the capture (its next line shorter and
    another record) keeps its complete entries and the record after it stays its own."""
    cut = _trl_dict(1)[:150]
    log = tmp_path / "cut.log"
    log.write_text(cut + "\n" + _trl_dict(2) + "\n" + _trl_dict(3) + "\n")
    run = load_runs(log)[0]
    assert run.n_steps == 3
    assert list(run.frame["reward_mean"].notna()) == [False, True, True]


def _nan_csv(tmp_path, reward: str) -> Run:
    rows = ["step,reward,reward_std,loss,grad_norm,kl"]
    rows += [f"{s},{reward},nan,0.0,nan,0.0" for s in range(1, 13)]
    (tmp_path / "run.csv").write_text("\n".join(rows) + "\n")
    return load_runs(tmp_path / "run.csv")[0]


def test_a_nan_reward_std_beside_a_finite_reward_is_a_group_of_one_first(tmp_path):
    d = diagnose(_nan_csv(tmp_path, "0.2"))
    assert d.check("numerical_failure").status == "critical"
    assert "reward_std" in d.check("numerical_failure").summary
    action = d.root_cause.first_action
    assert action.startswith("a setup problem from the first update")
    assert "deviation over one sample" in action and "num_generations" in action
    assert "dtype" not in action


def test_a_nan_reward_std_with_a_nan_reward_is_not_a_group_of_one(tmp_path):
    assert "one sample" not in diagnose(_nan_csv(tmp_path, "nan")).root_cause.first_action


def test_a_gradient_norm_in_the_billions_at_the_first_update_is_setup_not_the_lr(tmp_path):
    """slime's step 1: 2.96e9 with the loss and KL normal had read "restart, then
    learning_rate 1e-7 -> 5e-8": the first gradient is taken before any update."""
    log = tmp_path / "slime.log"
    rows = [(1, 2955012562.8, 0.102, 0.0), (28, 2217390918.5, 0.145, 0.0007)]
    log.write_text("\n".join(
        f"step {s}: {{'train/loss': {loss}, 'train/pg_clipfrac': 0.0, 'train/kl_loss': {kl}, "
        f"'train/grad_norm': {g}, 'train/lr-pg_0': 1e-07, 'train/step': {s}}}"
        for s, g, loss, kl in rows) + "\n")
    d = diagnose(load_runs(log)[0])
    cause = d.root_cause
    assert cause.mode == "grad_explosion" and cause.setup
    assert "taken on the initial model" in cause.first_action
    assert "learning_rate" not in cause.first_action
    assert "check gradients are clipped" in cause.first_action


def test_a_gradient_explosion_later_in_the_run_still_names_its_step_size():
    n = 60
    g = np.full(n, 0.8)
    g[40:] = 5e4
    run = make_run(grad_norm=g, loss=np.full(n, 0.1), reward=np.linspace(0.1, 0.5, n),
                   learning_rate=np.full(n, 1e-5))
    cause = diagnose(run).root_cause
    assert cause is not None and cause.mode == "grad_explosion"
    assert "taken on the initial model" not in cause.first_action


def test_an_evaluation_dict_with_unprefixed_keys_is_no_training_step(tmp_path):
    log = tmp_path / "unsloth.log"
    log.write_text(
        "{'loss': 0.0, 'grad_norm': 0.0, 'learning_rate': 5e-06, 'num_tokens': 9000.0, "
        "'completions/mean_length': 120.5, 'reward': 0.0, 'reward_std': 0.0, 'kl': 0.0, "
        "'epoch': 0.01}\n"
        "{'eval_loss': 3.45e-08, 'eval_runtime': 62.41, 'eval_samples_per_second': 1.362, "
        "'num_tokens': 10016.0, 'completions/mean_length': 40.1, 'epoch': 0.01}\n")
    run = load_runs(log)[0]
    assert run.n_steps == 1
    assert run.frame["response_length_mean"].tolist() == [120.5]


def test_a_progress_bar_drawn_on_the_dicts_own_line_gives_its_step(tmp_path):
    """LLaMA-Factory: "9/860 [00:43<1:05:18, 4.60s/it]{'loss': nan, ...}" had read as log
    lines 1 and 2."""
    log = tmp_path / "llamafactory.log"
    bar = "  {pct}%|{fill}| {n}/860 [00:43<1:05:18,  4.60s/it]"
    log.write_text("".join(
        bar.format(pct=n * 100 // 860, fill="#" * (n // 5), n=n)
        + f"{{'loss': nan, 'reward': {0.1 * k}, 'learning_rate': 1e-05, 'epoch': {n / 860:.2f}}}\n"
        for k, n in enumerate((9, 19, 29), start=1)))
    run = load_runs(log)[0]
    assert list(run.steps) == [9, 19, 29]


def test_a_console_whose_first_line_holds_commas_is_no_table(tmp_path, capsys):
    """A Ray worker's echoed source line had been a CSV header, its words offered to --map."""
    log = tmp_path / "agent.log"
    log.write_text(
        "(WorkerDict pid=82641)   with device_autocast_ctx, torch.cpu.amp.autocast(**kw), "
        "recompute_context:  # type: ignore\n"
        "(main_task pid=82052) wandb: uploading output.log; uploading wandb-summary.json\n"
        "(main_task pid=82052) wandb: Run history:\n"
        "(main_task pid=82052) wandb:   critic/score/mean ▁▃▅▆█\n")
    code, out, err = run_cli(capsys, "diagnose", str(log))
    assert code == 2 and "--map" not in err
    assert "not a training log grpo-doctor can read: text with no metric lines" in err
    assert "sparklines, not values" in err


def test_a_table_in_a_log_file_is_still_a_table(tmp_path):
    log = tmp_path / "metrics.log"
    log.write_text("step,reward,kl\n" + "".join(f"{s},{0.01 * s},{0.001 * s}\n"
                                                for s in range(1, 30)))
    run = load_runs(log)[0]
    assert run.format == "csv" and run.n_steps == 29


def test_an_audit_says_a_log_file_that_held_no_run(tmp_path, capsys):
    (tmp_path / "empty.log").write_text("(main_task pid=1) wandb: Run history:\n"
                                        "(main_task pid=1) nothing, here, at all\n")
    steps = np.arange(1, 41)
    (tmp_path / "run.csv").write_text("step,reward\n" + "".join(
        f"{s},{0.01 * s}\n" for s in steps))
    code, out, _ = run_cli(capsys, "audit", str(tmp_path))
    assert "1 log file with no training metrics (-v)" in out


def test_ms_swift_entropy_mean_is_the_entropy(tmp_path):
    log = tmp_path / "logging.jsonl"
    log.write_text("".join(
        f'{{"loss": 0.01, "reward": 0.5, "entropy/mean": {0.8 - 0.01 * s}, "entropy/max": 2.0, '
        f'"global_step/max_steps": "{s}/547"}}\n' for s in range(1, 4)))
    run = load_runs(log)[0]
    assert run.mapping.get("entropy") == "entropy/mean"


def test_a_kl_far_from_0_at_the_first_update_is_said_on_a_short_log():
    d = diagnose(make_run(kl=np.array([0.63]), loss=np.array([0.1]), reward=np.array([0.2])))
    assert d.status == "inconclusive"
    assert any("KL of 0.63 at step 1, the first update" in s for s in d.signs)
    later = make_run(steps=np.array([40]), kl=np.array([0.63]), loss=np.array([0.1]))
    assert not any("first update" in s for s in diagnose(later).signs)


def test_half_the_completions_cut_on_a_short_log_is_said():
    """verl's response_length/clip_ratio 0.521 on a one-step excerpt went unsaid (trial 62)."""
    d = diagnose(make_run(response_length__clip_ratio=np.array([0.521]),
                          reward=np.array([0.3]), loss=np.array([0.1])))
    assert any(s.startswith("52% or more of completions cut at the length cap") for s in d.signs)
    quiet = diagnose(make_run(response_length__clip_ratio=np.array([0.3]),
                              reward=np.array([0.3]), loss=np.array([0.1])))
    assert not any("cut at the length cap" in s for s in quiet.signs)


def _constrained_run() -> Run:
    """Trial 65's shape: a grammar-constrained run logged every 10 steps, its KL 10,833 at the
    first log and decaying, every completion at the 128-token cap, the reward 0.024 then 0,
    the lr warming up 1.1e-6 -> 4.9e-6."""
    n = 21
    steps = np.arange(10, 10 * n + 1, 10)
    kl = np.maximum(10833 * np.exp(-np.arange(n) / 1.2), 0.05)
    reward = np.zeros(n)
    reward[0] = 0.024
    return make_run(steps=steps, kl=kl, reward=reward, reward_std=np.zeros(n),
                    learning_rate=np.linspace(1.1e-6, 4.9e-6, n),
                    completions__clipped_ratio=np.r_[0.975, np.ones(n - 1)],
                    completions__mean_length=np.full(n, 128.0), loss=kl / 10)


def test_a_reward_best_at_its_first_log_is_no_warm_up_overshoot():
    cause = diagnose(_constrained_run()).root_cause
    assert "its value when the reward peaked" not in cause.first_action, cause


def test_a_kl_in_the_thousands_at_the_first_log_is_the_reference_or_the_sampler():
    cause = diagnose(_constrained_run()).root_cause
    assert cause.mode == "kl_drift" and cause.setup, cause
    assert cause.first_action.startswith("check the reference model against the policy, and "
                                         "the sampler against both"), cause
    assert "learning_rate" not in cause.first_action


def test_near_random_entropy_on_a_short_log_is_said_before_the_reward():
    d = diagnose(make_run(entropy=np.array([9.49, 9.48]), reward=np.zeros(2),
                          reward_max=np.zeros(2), reward_min=np.zeros(2)))
    assert d.signs[0].startswith("an entropy of 9.48 nats per token or more: sampling is "
                                 "near-random"), d.signs
    assert "the rollout engine runs the trained weights" in d.signs[0]


def test_a_reward_std_of_0_on_every_step_is_every_group_alike_and_shares_round_down():
    d = diagnose(make_run(reward_std=np.zeros(2), reward=np.array([0.0, 0.0]),
                          grad_norm=np.array([0.1, 0.2])))
    assert any(s.startswith("every group with equal rewards") for s in d.signs), d.signs
    cut = diagnose(make_run(response_length__clip_ratio=np.array([0.996, 0.997]),
                            reward=np.array([0.1, 0.2])))
    assert any(s.startswith("99% or more of completions cut") for s in cut.signs), cut.signs


def test_a_log_with_no_rl_metric_is_said_as_supervised_and_gets_no_grpo_lr(tmp_path):
    log = tmp_path / "sft.log"
    log.write_text("".join(f"{{'loss': {5.0 - 0.03 * s:.3f}, 'grad_norm': 1.2, "
                           f"'learning_rate': 5e-05, 'epoch': {s / 100:.2f}}}\n"
                           for s in range(1, 29)))
    d = diagnose(load_runs(log)[0])
    assert d.status == "inconclusive"
    assert d.status_reason.startswith("no RL metric logged (a supervised log?)")
    assert not any("learning_rate 5e-5 ->" in n for n in d.notes), d.notes
    assert any(n.startswith("no RL metric in this log") for n in d.notes)


def test_a_hard_wrapped_dict_with_crlf_line_ends_is_read_whole(tmp_path):
    """helper-84: "\\r\\n" left an empty piece that stopped the wrap: reward and KL dropped."""
    text = _trl_dict(1, "nan")
    log = tmp_path / "pasted.log"
    log.write_bytes((_wrap(text, 97).replace("\n", "\r\n") + "\r\n").encode())
    run = load_runs(log)[0]
    assert run.frame["reward_mean"].iloc[0] == 0.216 and "kl" in run.frame.columns


def test_an_evaluations_sampling_params_are_not_the_rollouts(tmp_path):
    """vLLM's SamplingParams of a validation pass (temperature=0.0) had read as the run's
    setting: "temperature 0 -> 1.0" (helper-84)."""
    from grpo_doctor.importers.console_text import printed_settings

    assert printed_settings("INFO eval SamplingParams(n=1, temperature=0.0, top_p=1.0)\n") == {}
    assert printed_settings("RUN learning_rate=1e-4 temperature=0.7 beta=0.1\n")[
        "temperature"] == 0.7


def test_a_cut_name_whose_ends_overlap_picks_no_run(tmp_path, capsys):
    rows = ["run,step,reward"] + [f"{name},{s},{0.01 * s}" for name in ("run_1", "run_12")
                                  for s in range(1, 30)]
    (tmp_path / "runs.csv").write_text("\n".join(rows) + "\n")
    code, _, err = run_cli(capsys, "diagnose", str(tmp_path / "runs.csv"), "--run", "run_1…_1")
    assert code == 2 and "no run named" in err


def test_an_evaluation_dicts_unprefixed_key_never_overwrites_its_eval_one(tmp_path):
    """helper-84: an eval dict's 'reward' had replaced its 'eval_reward' as it was prefixed."""
    log = tmp_path / "eval.log"
    log.write_text(
        "".join(f"{{'loss': 0.1, 'reward': {0.1 * s}, 'learning_rate': 1e-06, 'epoch': "
                f"{s / 10}}}\n" for s in range(1, 4))
        + "{'eval_loss': 0.5, 'eval_reward': 0.9, 'reward': 0.1, 'eval_runtime': 3.0, "
          "'epoch': 0.3}\n")
    run = load_runs(log)[0]
    assert run.n_steps == 3
    assert run.mapping["heldout_score"] == "eval_reward"
    assert run.frame["heldout_score"].dropna().tolist() == [0.9]


# --- trial 66 -------------------------------------------------------------------------------


def test_step_labelled_lines_of_cosmos_rl_prime_rl_and_megatron_are_read(tmp_path):
    """Each was refused as "text with no metric lines"."""
    cosmos = "".join(
        f"[rank0]:[cosmos] 2025-06-13 12:17:57,593 - cosmos - INFO - Step: {s}/4725, Loss: "
        f"-0.02344, Learning rate: 2.00000e-06, Iteration time: 79.064s, Completion length: "
        f"352, Reward: {1.0 + s / 1000:.4f}\n" for s in range(861, 868))
    prime = "".join(
        f"Generating rollouts (train): 100%|###| 512/512 [01:13<00:00,  6.97it/s]\n"
        f"02:33:26 SUCCESS Step {s} | Time: 73.77s | Reward: {0.38 + s / 1000:.4f} | "
        f"Throughput: 2408.9 tokens/s | Seq. Length: 345.6 tokens/sample | Async Level: 1\n"
        f"02:33:26    INFO Starting orchestrator step {s + 1}\n" for s in range(28, 33))
    megatron = "".join(
        f" [2025-11-25 07:19:22] iteration {s:8d}/    2174 | consumed samples: {64 * s:10d} | "
        "elapsed time per iteration (ms): 215613.0 | learning rate: 4.999872E-05 | loss: "
        f"-2.365559E-06 | reward: 7.617188E-01 | reward_std: 1.261245E-01 | "
        "completions/mean_length: 4.041312E+03 | grad norm: 0.016 | number of nan "
        "iterations:   0 |\n" for s in range(7, 10))
    for name, text, steps, metrics in (
            ("cosmos.log", cosmos, [861, 867], {"reward_mean", "loss", "learning_rate",
                                                 "response_length_mean"}),
            ("prime.log", prime, [28, 32], {"reward_mean"}),
            ("megatron.log", megatron, [7, 9], {"reward_mean", "reward_std", "grad_norm",
                                                 "learning_rate", "response_length_mean"})):
        path = tmp_path / name
        path.write_text(text)
        (run,) = load_runs(path)
        assert [int(run.steps[0]), int(run.steps[-1])] == steps, name
        assert metrics <= set(run.mapping), (name, run.mapping)
    (run,) = load_runs(tmp_path / "cosmos.log")
    assert run.frame["reward_mean"].iloc[-1] == 1.867


def test_a_verl_step_line_a_terminal_wrapped_at_a_fixed_width_is_read_whole(tmp_path):
    """verl#1224's step 1049, cut every 238 columns: refused ("no metric grpo-doctor knows",
    offered global_seqlen/min as the reward), its score and entropy on the later lines."""
    line = ("step:1049 - global_seqlen/min:16832.000 - global_seqlen/mean:16842.000 - "
            "actor/entropy_loss:0.001 - critic/vf_loss:0.087 - actor/pg_loss:0.090 - "
            "actor/ppo_kl:0.000 - actor/grad_norm:0.629 - critic/score/mean:0.104 - "
            "critic/score/max:0.133 - critic/score/min:0.100 - response_length/mean:12.5")
    prefix = "(TaskRunner pid=3591053) "
    wrapped = _wrap(prefix + line, 80)
    assert wrapped.count("\n") >= 3 and "step:" not in wrapped.split("\n", 1)[1]
    log = tmp_path / "verl.log"
    log.write_text(wrapped + "\n(TaskRunner pid=3591053) saving checkpoint\n")
    (run,) = load_runs(log)
    assert run.frame["reward_mean"].iloc[0] == 0.104
    assert run.frame["entropy"].iloc[0] == 0.001
    assert run.frame["response_length_mean"].iloc[0] == 12.5
    # Unwrapped lines, one per step, stay as they are: a shorter line after one is no wrap.
    log.write_text(f"step:1 - {line[12:]}\nepoch 1 done, saving a checkpoint to ckpt/1 ...\n"
                   f"step:2 - {line[12:]}\n")
    (run,) = load_runs(log)
    assert list(run.steps) == [1, 2]


def test_a_ppo_critics_nan_is_a_numerical_failure_of_the_critic_not_the_policy(tmp_path):
    """verl#498: critic/vf_loss, vpred and grad norm NaN at step 1 while the policy's numbers
    were finite; the report had said nothing of it."""
    row = ("step:{s} - critic/kl:-0.000 - critic/vf_loss:{vf} - critic/vpred_mean:{vf} - "
           "critic/grad_norm:{vf} - actor/entropy_loss:0.442 - actor/pg_loss:-0.013 - "
           "actor/grad_norm:9.819 - critic/score/mean:0.594 - critic/score/max:1.000 - "
           "critic/score/min:0.000\n")
    log = tmp_path / "ppo.log"
    log.write_text(row.format(s=1, vf="nan"))
    diagnosis = diagnose(load_runs(log)[0])
    assert diagnosis.status == "critical"
    assert diagnosis.root_cause is not None
    assert diagnosis.root_cause.first_action.startswith("check the value model (critic) first")
    assert "critic.optim.lr" in diagnosis.root_cause.first_action
    # Later in a long run: a roll-back, and the critic's settings, not the policy's lr.
    log.write_text("".join(row.format(s=s, vf="nan" if s >= 30 else "0.5")
                           for s in range(1, 61)))
    diagnosis = diagnose(load_runs(log)[0])
    (check,) = [c for c in diagnosis.checks if c.mode == "numerical_failure"]
    assert check.status.value == "critical" and check.onset_step == 30
    assert not any("learning_rate" in r for r in check.remedies)
    assert any("value model (critic)" in r for r in check.remedies)


def test_a_nan_in_a_column_no_check_reads_is_said_on_a_short_log(tmp_path):
    log = tmp_path / "short.log"
    log.write_text("step:1 - critic/score/mean:0.5 - actor/entropy:0.4 - "
                   "timing/weird_ratio:nan\n")
    diagnosis = diagnose(load_runs(log)[0])
    assert any(s.startswith("NaN logged in timing/weird_ratio (from step 1)")
               for s in diagnosis.signs), diagnosis.signs


def test_a_kl_at_a_logs_first_line_is_no_first_update_when_its_steps_are_lines(tmp_path):
    """An excerpt at epoch 0.4 whose dicts hold no step: its first line is no first update
    (rl-swarm#312's KL 0.58 had read "check the reference model")."""
    log = tmp_path / "excerpt.log"
    log.write_text("".join(
        f"{{'loss': 0.01, 'reward': 0.07, 'reward_std': 0.01, 'kl': 0.58, 'epoch': {e}}}\n"
        for e in (0.4, 0.45)))
    diagnosis = diagnose(load_runs(log)[0])
    assert not any("reference model" in s for s in diagnosis.signs), diagnosis.signs


def test_near_greedy_entropy_on_a_short_log_is_said():
    """verl#1224's step 1049: entropy 0.001, unsaid on its one-step excerpt."""
    d = diagnose(make_run(steps=np.array([1049]), entropy=np.array([0.001]),
                          reward=np.array([0.104])))
    assert any(s.startswith("an entropy of 0.001 nats per token or less") for s in d.signs)
    low = diagnose(make_run(entropy=np.array([0.05, 0.04]), reward=np.array([0.5, 0.6])))
    assert not any("near-greedy" in s for s in low.signs)  # low, not greedy


# --- helper-88 (hostile, on trial 66's readers) ------------------------------------------------


def test_labelled_lines_beside_a_dict_nan_in_capitals_and_thousands_separators(tmp_path):
    """One printed dict had hidden 100 labelled steps; Megatron's NAN was dropped (the NaN
    check passed); "Completion length: 1,024" read 1 (a critical "generation stops")."""
    log = tmp_path / "prime.log"
    log.write_text("Config: {'loss': 'grpo', 'kl': 0.0, 'reward': 'math'}\n" + "".join(
        f"SUCCESS Step {s} | Reward: {0.3 + s / 1000:.4f} | Seq. Length: 345 tokens\n"
        for s in range(1, 101)) + "{'reward': 0.61, 'loss': 0.2}\n")
    (run,) = load_runs(log)
    assert run.n_steps == 100 and int(run.steps[-1]) == 100
    assert not any("log-line numbers" in n for n in run.notes)
    log.write_text("".join(
        f" iteration {s:8d}/ 2174 | learning rate: 4.999872E-05 | loss: "
        f"{'NAN' if s > 5 else '-2.365559E-06'} | reward: 7.6E-01 | grad norm: "
        f"{'NAN' if s > 5 else '0.016'} |\n" for s in range(1, 21)))
    (run,) = load_runs(log)
    assert len(run.nan_steps["loss"]) == 15 and len(run.nan_steps["grad_norm"]) == 15
    log.write_text("".join(f"Step {s}, Reward: 1,234.5, Loss: 0.1, Completion length: 1,024\n"
                           for s in range(1, 31)))
    (run,) = load_runs(log)
    assert run.frame["response_length_mean"].iloc[0] == 1024.0
    assert run.frame["reward_mean"].iloc[0] == 1234.5


def test_a_wrapped_verl_line_under_crlf_or_a_trimmed_cut_is_joined_and_others_are_not(
        tmp_path):
    line = ("step:{s} - global_seqlen/min:16832.000 - global_seqlen/mean:16842.000 - "
            "actor/entropy_loss:0.001 - critic/vf_loss:0.087 - actor/pg_loss:0.090 - "
            "actor/ppo_kl:0.000 - actor/grad_norm:0.629 - critic/score/mean:0.104 - "
            "critic/score/max:0.133 - critic/score/min:0.100 - response_length/mean:12.5")
    steps = range(1, 11)
    crlf = "\r\n".join(_wrap(line.format(s=s), 80) for s in steps) + "\r\n"
    trimmed = "\n".join("\n".join(p.rstrip(" ") for p in _wrap(line.format(s=s), 80).split(
        "\n")) for s in steps) + "\n"
    for name, text in (("crlf.log", crlf), ("trimmed.log", trimmed)):
        path = tmp_path / name
        path.write_text(text, newline="")
        (run,) = load_runs(path)
        assert run.n_steps == 10, name
        assert set(run.frame["response_length_mean"]) == {12.5}, name
    # A short step line followed by logger lines of one width, or a line starting with a
    # digit: never glued on (response_length 12.5 had read 12.51).
    logger = "2025-06-01 10:00:00,123 - INFO - timing/gen:12.0 - saving the checkpoint now"
    digits = "1 - done " + "x" * 90
    for name, after in (("logger.log", [logger, logger]), ("digits.log", [digits])):
        path = tmp_path / name
        path.write_text("".join(line.format(s=s) + "\n" + "\n".join(after) + "\n"
                                for s in steps))
        (run,) = load_runs(path)
        assert run.n_steps == 10 and set(run.frame["response_length_mean"]) == {12.5}, name


def test_nan_notes_name_a_critic_only_for_a_critics_values(tmp_path):
    """timing/* and critic/returns (which verl logs for GRPO, with no critic) NaN had read
    "the value model (critic) went NaN"; critic_loss and value_loss NaN had read HEALTHY."""

    def run_with(column: str):
        path = tmp_path / f"{column.replace('/', '_')}.csv"
        path.write_text(f"step,reward,entropy,loss,{column}\n" + "".join(
            f"{s},{0.2 + 0.015 * s:.3f},0.5,0.01,{'nan' if s > 20 else 1.0}\n"
            for s in range(1, 41)))
        return diagnose(load_runs(path)[0])

    for column in ("timing/gen", "critic/returns/mean"):
        (note,) = [x for x in run_with(column).notes if x.startswith("NaN logged in")]
        assert "critic)" not in note, note
    for column in ("critic_loss", "value_loss"):
        d = run_with(column)
        assert d.check("numerical_failure").status.value == "critical", column
        assert "value model (critic)" in d.root_cause.first_action
        assert "learning_rate" not in d.root_cause.first_action
    rm = run_with("reward_model/loss")
    assert "check the reward model, not the policy" in rm.root_cause.first_action


def test_a_kl_never_computed_at_beta_0_is_no_numerical_failure(tmp_path):
    """Trial 69 (open-r1#704): a notebook table with kl "nan" on every step and a finite loss
    read WARNING "check the KL estimator for log(0)"; TRL computes no KL at beta 0. A KL that
    was a number once, or a config with beta above 0, is still a finding."""
    rows = ["Step | Training Loss | reward | reward_std | kl | entropy",
            "-- | -- | -- | -- | -- | --"]
    rows += [f"{s} | {-0.28 + 0.07 * s:.4f} | {13.4 - s:.4f} | 21.8 | nan | "
             + ("0" if s == 1 else "No Log") for s in range(1, 5)]
    log = tmp_path / "nb.txt"
    log.write_text("\n".join(rows) + "\n")
    d = diagnose(load_runs(log)[0])
    check = d.check("numerical_failure")
    assert check.status.value == "ok" and "no KL computed" in check.summary, check.summary
    assert d.status == "inconclusive"
    # An entropy of exactly 0 on one step of four is no near-greedy sampler.
    assert not any("near-greedy" in s for s in d.signs), d.signs
    with_beta = diagnose(load_runs(log)[0], DoctorConfig(run_config={"beta": 0.04}))
    assert with_beta.check("numerical_failure").status.value == "warning"
    # verl with both KL switches off keeps its default kl_loss_coef 0.001: no KL term all
    # the same (h99: "check the KL estimator for log(0)", where preflight said the KL is off).
    verl_off = {"actor_rollout_ref": {"actor": {"use_kl_loss": False, "kl_loss_coef": 0.001}},
                "algorithm": {"use_kl_in_reward": False, "kl_ctrl": {"kl_coef": 0.001}}}
    off = diagnose(load_runs(log)[0], DoctorConfig(run_config=verl_off))
    assert off.check("numerical_failure").status.value == "ok", off.check("numerical_failure")
    verl_on = {"actor_rollout_ref": {"actor": {"use_kl_loss": True, "kl_loss_coef": 0.001}}}
    on = diagnose(load_runs(log)[0], DoctorConfig(run_config=verl_on))
    assert on.check("numerical_failure").status.value == "warning"
    once = tmp_path / "once.txt"
    once.write_text("\n".join(rows).replace("| 21.8 | nan | 0", "| 21.8 | 0.01 | 0") + "\n")
    assert diagnose(load_runs(once)[0]).check("numerical_failure").status.value == "warning"


def test_a_trainer_log_pasted_with_an_elision_line_keeps_its_steps(tmp_path):
    """Trial 69 (LlamaFactory#856): LLaMA-Factory's trainer_log lines with the user's "..."
    between them fell to the console reader, which read current_steps 10..1260 as lines
    1..5, hiding a reward flat over 1,250 steps."""
    line = ('{{"current_steps": {s}, "total_steps": 1287, "loss": -0.19, "reward": {r}, '
            '"learning_rate": 1e-05, "epoch": 0.01, "percentage": 0.78}}')
    log = tmp_path / "trainer_log.log"
    log.write_text("\n".join([line.format(s=10, r=0.13), line.format(s=20, r=0.14), "...",
                              line.format(s=1250, r=0.135), line.format(s=1260, r=0.125)]))
    run = load_runs(log)[0]
    assert list(run.steps) == [10, 20, 1250, 1260]
    assert "current_steps" not in run.frame.columns


def test_a_wandb_run_summary_pasted_alone_is_read_as_one_point(tmp_path):
    """Trial 69 (Tool-N1#9): wandb's closing "Run summary" holds each metric's last value
    (the score and the advantages 0: the reward never wired); it was refused as if it were the
    "Run history" sparklines, which still are."""
    keys = {"actor/entropy_loss": "0.1888", "actor/pg_loss": "0", "critic/score/mean": "0",
            "critic/score/max": "0", "critic/score/min": "0", "critic/advantages/mean": "0",
            "training/global_step": "120"}
    log = tmp_path / "summary.log"
    log.write_text("wandb: Run summary:\n" + "".join(
        f"wandb: {k:>30} {v}\n" for k, v in keys.items()) + "wandb: Synced 5 W&B file(s)\n")
    run = load_runs(log)[0]
    assert list(run.steps) == [120] and run.frame["reward_mean"].iloc[0] == 0
    d = diagnose(run)
    assert d.status == "inconclusive"
    assert any("scored the same (0)" in s for s in d.signs), d.signs
    assert any("Run summary" in n for n in d.notes)
    history = tmp_path / "history.log"
    history.write_text("wandb: Run history:\nwandb:  critic/score/mean ▁▂▃▅▇█\n")
    with pytest.raises(FormatError, match="sparklines"):
        load_runs(history)


def test_a_nan_at_the_second_logged_step_is_not_said_as_the_first_updates(tmp_path):
    """Trial 69 (ChatGLM-Efficient-Tuning#49): loss finite at step 1, NaN at step 2, read "a
    numerical setup problem from the first update"."""
    log = tmp_path / "ppo.log"
    log.write_text("\n".join("{" + f"'loss': {v}, 'reward': -2.03, 'learning_rate': 5e-05"
                             + "}" for v in ("0.329", "nan", "0.31", "0.30")) + "\n")
    first = diagnose(load_runs(log)[0]).root_cause.first_action
    assert "from its first updates (step 2)" in first, first


# --- helper-93 (hostile, on session 29's readers) -----------------------------------------------


def test_an_inner_counter_or_a_flag_in_a_printed_dict_is_no_step(tmp_path):
    """'iteration', 'update' and '_step' had become the step of printed dicts: an inner loop's
    counter kept 4 of 40 steps, 'update': True made a 40-step run one step; a negative
    global_steps read the run backwards."""
    rows = ["{" + f"'loss': 0.1, 'reward': {0.1 + s / 100:.3f}, 'iteration': {s % 4}, "
            f"'update': True, 'epoch': {s / 40:.3f}" + "}" for s in range(1, 41)]
    log = tmp_path / "inner.log"
    log.write_text("\n".join(rows) + "\n")
    assert load_runs(log)[0].n_steps == 40
    back = tmp_path / "back.log"
    back.write_text("\n".join("{" + f"'loss': 0.1, 'reward': 0.5, 'global_steps': {-s}" + "}"
                              for s in range(1, 11)) + "\n")
    assert list(load_runs(back)[0].steps) == list(range(1, 11))


def test_a_wandb_summary_with_spaced_values_crlf_or_twice_reads_the_last_whole(tmp_path):
    block = ("wandb: Run summary:\n"
             "wandb:            run_name Qwen 7B GRPO\n"
             "wandb:   critic/score/mean {score}\n"
             "wandb:        actor/pg_loss 0\n"
             "wandb:        _step {step}\n")
    log = tmp_path / "twice.log"
    log.write_text(block.format(score=0.3, step=100) + "wandb: Synced\n"
                   + block.format(score=0.0, step=250) + "wandb: Synced\n")
    run = load_runs(log)[0]
    assert list(run.steps) == [250] and run.frame["reward_mean"].iloc[0] == 0
    crlf = tmp_path / "crlf.log"
    crlf.write_bytes(block.format(score=0.5, step=7).replace("\n", "\r\n").encode())
    run = load_runs(crlf)[0]
    assert list(run.steps) == [7] and run.frame["reward_mean"].iloc[0] == 0.5


def test_an_infinite_kl_on_every_step_was_computed(tmp_path):
    rows = ["Step | Training Loss | reward | kl"] + [f"{s} | 0.1 | 0.5 | inf" for s in range(1, 5)]
    log = tmp_path / "inf.txt"
    log.write_text("\n".join(rows) + "\n")
    check = diagnose(load_runs(log)[0]).check("numerical_failure")
    assert check.fired and "no KL computed" not in check.summary, check.summary


def test_key_value_blocks_before_a_closing_wandb_summary_are_the_run(tmp_path):
    """helper-97: a log of key: value blocks ending with W&B's summary read as one step; and
    a last summary with no metric in it refused a log whose earlier one had them."""
    blocks = "".join(f"step: {s}\nreward: {0.1 + s / 200:.3f}\nloss: 0.1\n\n"
                     for s in range(1, 41))
    log = tmp_path / "kv.log"
    log.write_text(blocks + "wandb: Run summary:\nwandb:   train/reward 0.3\n"
                   "wandb:   train/global_step 40\nwandb:   _step 99\n")
    assert load_runs(log)[0].n_steps == 40
    two = tmp_path / "two.log"
    two.write_text("wandb: Run summary:\nwandb:   critic/score/mean 0.2\n"
                   "wandb:   training/global_step 10\nwandb:   _step 31\n\n"
                   "wandb: Run summary:\nwandb:   run_name Qwen 7B\n")
    run = load_runs(two)[0]
    assert list(run.steps) == [10] and run.frame["reward_mean"].iloc[0] == 0.2


def _ds_chat(epoch: int, step: int, act: str, reward: float) -> str:
    """DeepSpeed-Chat step 3's two lines per step (its main.py's print_rank_0 calls)."""
    return (f"|E2E latency=2.12s |Gather latency=0.00s (0.00%) |Generate time=1.59s (75.13%)\n"
            f"epoch: {epoch}|step: {step}|ppo_ep: 1|act_loss: {act}|cri_loss: {act}|"
            f"unsuper_loss: 0.0\naverage reward score: {reward}\n" + "-" * 85 + "\n")


def test_deepspeed_chat_ppo_lines_are_read_with_the_reward_printed_after_them(tmp_path):
    """Trial 74: DeepSpeed-Chat's 'epoch: 0|step: 3184|ppo_ep: 1|act_loss: inf|...' with
    'average reward score: -6.36' on the next line had been refused ("text with no metric
    lines"), and audit had passed it over as a document: an inf loss unseen."""
    log = tmp_path / "ds_chat.log"
    log.write_text(_ds_chat(0, 3183, "30.92", -7.81) + _ds_chat(0, 3184, "inf", -6.36)
                   + _ds_chat(0, 3185, "inf", -4.54))
    run = load_runs(log)[0]
    assert list(run.steps) == [3183, 3184, 3185]
    assert list(run.frame["reward_mean"]) == [-7.81, -6.36, -4.54]
    assert run.mapping["loss"] == "loss" and "critic_loss" in run.unmapped
    check = diagnose(run).check("numerical_failure")
    assert check.status == "critical" and check.onset_step == 3184
    # The critic's inf is said beside the actor's (helper-104: read, then unsaid).
    assert "critic_loss (2 values from step 3184)" in check.summary, check.summary


def test_deepspeed_chat_steps_count_on_across_epochs_and_the_inline_reward_is_read(tmp_path):
    """Its step counts one epoch's prompts: epoch 1 starts at step 0 again, which is no
    restart. A later version prints the reward and 'KL distance' on the step's own line."""
    log = tmp_path / "ds_chat2.log"
    log.write_text(_ds_chat(0, 0, "0.5", 0.1) + _ds_chat(0, 1, "0.4", 0.2)
                   + _ds_chat(1, 0, "0.3", 0.3) + _ds_chat(1, 1, "0.2", 0.4))
    run = load_runs(log)[0]
    assert list(run.steps) == [0, 1, 2, 3] and list(run.frame["reward_mean"]) == [
        0.1, 0.2, 0.3, 0.4]
    inline = tmp_path / "ds_chat3.log"
    inline.write_text("".join(
        f"epoch: 0|step: {s}|act_loss: 0.1|cri_loss: 0.2|unsuper_loss: 0.0|average reward "
        f"score: {s / 10}|KL distance: {s / 100}\n" for s in range(1, 6)))
    run = load_runs(inline)[0]
    assert list(run.frame["reward_mean"]) == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert list(run.frame["kl"]) == [0.01, 0.02, 0.03, 0.04, 0.05]


@pytest.mark.parametrize("step_line", ["", "wandb:        train/global_step 500\n"])
def test_a_nan_in_a_wandb_summary_is_the_runs_end_not_its_first_update(tmp_path, step_line):
    """h99: a 'Run summary' with loss nan read "a numerical setup problem from the first
    update ... check the model and optimizer dtype" (no step: placed at 1), or "roll back to a
    checkpoint from before step 500": a summary holds each metric's last value, not when it
    went NaN."""
    log = tmp_path / "summary.log"
    log.write_text("wandb: Run history:\nwandb:   train/reward ▁▂▃▄▅▆▇█\nwandb:\n"
                   "wandb: Run summary:\n" + step_line + "wandb:   train/reward 0.71\n"
                   "wandb:     train/loss nan\nwandb:   train/grad_norm nan\n")
    d = diagnose(load_runs(log)[0])
    cause = d.root_cause
    assert cause.mode == "numerical_failure"
    assert "when they began is not in a summary" in cause.summary, cause.summary
    assert cause.first_action.startswith("find the step they began in the run's history")
    text = cause.first_action + cause.summary
    assert "setup problem" not in text and "first update" not in text and "500" not in text


@pytest.mark.parametrize("step_key", ["'step': 1", "'global_step': {s}.5"])
def test_printed_dicts_whose_step_key_is_no_step_keep_every_record(tmp_path, step_key):
    """h99: 40 dicts all at 'step': 1 had merged into one record, and a 'global_step' of
    i + 0.5 had rounded pairs into one (20 steps read HEALTHY), both with "duplicate steps:
    0": a step key that does not count the records is no step; they keep their order."""
    log = tmp_path / "dicts.log"
    log.write_text("".join(
        "{" + f"'loss': 0.01, 'reward': {0.2 + s / 100:.3f}, 'kl': 0.001, 'epoch': {s / 40}, "
        + step_key.format(s=s) + "}\n" for s in range(1, 41)))
    run = load_runs(log)[0]
    assert run.n_steps == 40 and list(run.frame["reward_mean"])[:2] == [0.21, 0.22]


def test_deepspeed_chat_variants_keep_their_reward(tmp_path):
    """h103: a logger's timestamped lines ('epoch: 0, step: 0, ...' and '... - INFO - average
    reward score: -7'), a trailing line of several averages, and 'Epoch: 0 | Step: 0 | ...
    Actor Loss: ...' had lost the reward or been refused."""
    logger = "".join(f"2024-01-01 10:00:0{s % 10} - INFO - epoch: 0, step: {s}, ppo_ep: 1, "
                     f"act_loss: 0.{s},cri_loss: 0.3, pretrain_loss: 0.0\n2024-01-01 10:00:0"
                     f"{s % 10} - INFO - average reward score: -{7 - s / 10}\n"
                     for s in range(10))
    spaced = "".join(f"epoch: 0|step: {s}|ppo_ep: 1|act_loss: 0.5|cri_loss: 0.3|unsuper_loss: "
                     f"0.0\nAverage reward score: {s / 10} Average return: 5 Average length: "
                     f"200 Average kl: 0.0{s}\n" for s in range(10))
    mainline = "".join(f"Epoch: 0 | Step: {s} | PPO Epoch: 1 | Actor Loss: 0.5 | Critic Loss: "
                       f"0.3 | Unsupervised Loss: 0.0\nAverage reward score: {s / 10} | EMA "
                       f"reward score: {s / 20}\n" for s in range(10))
    for name, text in (("logger", logger), ("spaced", spaced), ("mainline", mainline)):
        log = tmp_path / f"{name}.log"
        log.write_text(text)
        run = load_runs(log)[0]
        assert run.n_steps == 10 and run.mapping.get("reward_mean") == "reward", (name, run.mapping)
        assert run.mapping.get("loss") == "loss", name
    run = load_runs(tmp_path / "spaced.log")[0]
    assert list(run.frame["kl"])[:2] == [0.0, 0.01]


@pytest.mark.parametrize("per_step", [2, 5, 8])
def test_several_printed_dicts_a_step_keep_their_step_key(tmp_path, per_step):
    """h103: 5 or more dicts a step (8 ranks printing) had been read as line numbers, and a
    constant 'step' beside a real 'global_step' hid it."""
    log = tmp_path / "ranks.log"
    log.write_text("".join("{" + f"'loss': 0.1, 'reward': {s / 10}, 'step': {s}" + "}\n"
                           for s in range(1, 11) for _ in range(per_step)))
    assert list(load_runs(log)[0].steps) == list(range(1, 11))
    both = tmp_path / "both.log"
    both.write_text("".join("{" + f"'loss': 0.1, 'reward': {s / 100}, 'step': 0, "
                            f"'global_step': {s}" + "}\n" for s in range(1, 21)))
    assert list(load_runs(both)[0].steps) == list(range(1, 21))


def test_a_custom_loops_step_lines_of_key_equals_value_are_read(tmp_path):
    """Trial 74: a custom JAX loop's 'Step   0: loss=-0.0000, mean_reward=0.00' was refused
    ("text with no metric lines"); items apart by commas or spaces."""
    log = tmp_path / "loop.log"
    log.write_text("Starting training for 100 steps...\n" + "".join(
        f"Step {s:>3}: loss={s / 100:.4f}, mean_reward={s / 10:.2f}\n  Samples: ' a', ' b'\n"
        for s in range(6)) + "Step   6: loss=0.06 mean_reward=0.6\n")
    run = load_runs(log)[0]
    assert list(run.steps) == list(range(7))
    assert list(run.frame["reward_mean"]) == [s / 10 for s in range(7)]
