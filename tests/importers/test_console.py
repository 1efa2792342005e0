"""Console logs: verl step lines, printed HF/TRL dicts, pasted tables, key: value blocks."""

import contextlib
import math
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_doctor import recipe
from grpo_doctor.errors import FormatError, GrpoDoctorError
from grpo_doctor.importers import LoadOptions, load_runs
from grpo_doctor.importers.console import (
    IMPORTER,
    lenient_config,
    literal_dict,
    parse_console,
    parse_verl_line,
    salvage_pairs,
    split_segments,
)
from tests.importers.common import FIXTURES, write

# --- verl ---------------------------------------------------------------------------------------


def test_verl_line_strips_units_and_keeps_nan():
    step, rec = parse_verl_line(
        "step:3 - actor/lr(1e-4):0.010 - actor/kl_loss:nan - critic/score/mean:-0.250 - "
        "response_length/min:38.0 -"
    )
    assert step == 3
    assert rec["actor/lr"] == 1e-06  # 0.010 in units of 1e-4, exactly
    assert math.isnan(rec["actor/kl_loss"])
    assert rec["critic/score/mean"] == -0.25
    assert rec["response_length/min"] == 38.0  # a trailing " -" is not part of the value


def test_verl_line_of_numpy_reprs_is_read():
    """verl formats each value with pformat: under numpy 2 that is its repr. Every actor/
    metric had been dropped without a word (trial 39)."""
    step, rec = parse_verl_line(
        "step:2 - actor/entropy:np.float64(0.0179) - actor/lr(1e-4):np.float64(0.010) - "
        "actor/grad_norm:np.float64(nan) - critic/score/mean:1.18 - actor/n:np.int64(8)")
    assert step == 2 and rec["actor/entropy"] == 0.0179 and rec["actor/lr"] == 1e-06
    assert math.isnan(rec["actor/grad_norm"]) and rec["critic/score/mean"] == 1.18
    assert rec["actor/n"] == 8


def test_verl_line_cut_off_keeps_complete_items():
    step, rec = parse_verl_line("step:59 - actor/grad_norm:nan - perf/mfu/actor:0.042 - prompt")
    assert step == 59 and set(rec) == {"actor/grad_norm", "perf/mfu/actor"}


def test_verl_ignores_global_step_inside_a_key():
    assert parse_verl_line("training/global_step:34 - training/epoch:0") is None


def test_segments_strip_ansi_and_ray_prefixes():
    text = "\x1b[2m\x1b[36m(main_task pid=1)\x1b[0m step:1 - a:1\x1b[36m(pid=2)\x1b[0m noise\r x"
    segs = split_segments(text)
    assert [(s.text, s.source) for s in segs] == [
        ("step:1 - a:1", "(main_task pid=1)"), ("noise", "(pid=2)"), (" x", ""),
    ]


def test_verl_fixture_merges_lines_of_a_step_and_reads_config():
    (run,) = load_runs(FIXTURES / "console" / "verl.log")
    assert run.mapping["reward_mean"] == "critic/score/mean"
    assert run.mapping["kl"] == "actor/kl_loss"
    assert run.mapping["learning_rate"] == "actor/lr"
    assert run.frame.loc[12, "learning_rate"] == 1.2e-05
    # The validation line printed before the step's main line is merged into the same row.
    assert run.frame.loc[8, "heldout_score"] == pytest.approx(0.38)
    assert run.frame.loc[8, "reward_mean"] == 0.45
    assert run.duplicate_steps == 0 and run.restarts == 0
    cfg = run.config
    assert cfg["actor_rollout_ref.actor.optim.lr"] == 1e-06
    assert cfg["algorithm.adv_estimator"] == "grpo"
    assert cfg["actor_rollout_ref.rollout.n"] == 8
    assert cfg["trainer.logger"] == ["console"]
    assert cfg["algorithm.kl_ctrl.kl_coef"] == 0.001  # from the pretty-printed config dict
    assert cfg["actor_rollout_ref.actor.clip_ratio"] == 0.2
    assert cfg["total_training_steps"] == 12


def test_hydra_overrides_passed_as_one_quoted_string(tmp_path):
    path = write(tmp_path / "run.log",
                 'bash run.sh "data.train_batch_size=256 actor_rollout_ref.actor.optim.lr=1e-6"\n'
                 "step:0 - critic/score/mean:0.5 - critic/kl:0.000\n")
    (run,) = load_runs(path)
    assert run.config["data.train_batch_size"] == 256
    assert run.config["actor_rollout_ref.actor.optim.lr"] == 1e-06


def test_lenient_config_survives_a_lost_line():
    lines = [
        "{'a': {'b': {'c': 1,",
        "             'd': 2},",  # fine
        "       'e': {'f': 3,",
        # the line closing 'e' was lost from the capture
        "       'g': 'x'},",
        " 'h': [1, 2]}",
    ]
    assert lenient_config(lines) == {"a.b.c": 1, "a.b.d": 2, "a.e.f": 3, "a.g": "x", "h": [1, 2]}


# --- printed dicts ------------------------------------------------------------------------------


def test_literal_dict_reads_nan_inf_numpy_and_json_words():
    d = literal_dict(
        "{'loss': nan, 'kl': -inf, 'x': np.float64(0.5), 'y': tensor(2.0, device='cuda:0'), "
        '"z": NaN, "ok": true, "none": null, \'s\': \'nan\'}'
    )
    assert d is not None
    assert d["loss"] == "nan" and d["kl"] == "-inf" and d["x"] == 0.5 and d["y"] == 2.0
    assert d["z"] == "nan" and d["ok"] is True and d["none"] is None


def test_salvage_keeps_only_complete_numeric_entries():
    cut = "{'loss': 0.0, 'reward': 'nan', 'note': 'text', 'completion_length': 887.8"
    assert salvage_pairs(cut) == {"loss": "0.0", "reward": "nan"}


def test_hostile_dict_is_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    path = write(
        tmp_path / "evil.log",
        f"{{'loss': 0.5, 'x': __import__('os').system('touch {marker}')}}\n"
        f"{{'loss': 0.25, 'y': (lambda: open('{marker}', 'w'))()}}\n"
        "{'loss': 0.125, 'grad_norm': 1.0}\n",
    )
    (run,) = load_runs(path)
    assert not marker.exists()
    assert list(run.frame["loss"]) == [0.5, 0.25, 0.125]
    assert "x" not in run.frame.columns and "y" not in run.frame.columns
    assert any("not plain literals" in n for n in run.notes)


def test_trl_fixture_steps_come_from_the_progress_bar():
    (run,) = load_runs(FIXTURES / "console" / "trl.log")
    assert run.step_source == "given"
    assert any("progress bar" in n for n in run.notes)
    assert run.summary["train_runtime"] == 60.0
    assert "train_loss" not in run.frame.columns  # the closing summary is not a row


def test_real_trainer_console_matches_its_trainer_state():
    (console,) = load_runs(FIXTURES / "console" / "hf-trainer-real.log")
    (state,) = load_runs(FIXTURES / "trainer_state" / "hf-real")
    assert list(console.frame.index) == list(state.frame.index) == [2, 4, 6, 8, 10, 12]
    for metric in ("loss", "grad_norm", "learning_rate", "eval_loss"):
        a, b = console.frame[metric].to_numpy(), state.frame[metric].to_numpy()
        np.testing.assert_allclose(a, b, rtol=2e-3)  # transformers 5 prints 4 digits


def test_stated_logging_steps_number_the_dicts(tmp_path):
    path = write(tmp_path / "run.txt",
                 "TrainingArguments(logging_steps=5, max_steps=15)\n"
                 "{'loss': 0.3, 'reward': 1.0}\n{'loss': 0.2, 'reward': 1.5}\n"
                 "{'eval_loss': 0.4, 'epoch': 0.5}\n{'loss': 0.1, 'reward': 2.0}\n")
    (run,) = load_runs(path)
    assert list(run.frame.index) == [5, 10, 15]
    assert run.frame.loc[10, "eval_loss"] == 0.4  # an eval line shares the last train step
    assert run.config["max_steps"] == 15


def test_without_any_step_the_dicts_are_numbered_with_a_note(tmp_path):
    path = write(tmp_path / "run.txt", "{'loss': 0.3, 'kl': nan}\nfoo\n{'loss': 0.2, 'kl': 0.1}\n")
    (run,) = load_runs(path)
    assert list(run.frame.index) == [1, 2]
    assert list(run.nan_steps["kl"]) == [1]
    assert any("log-line numbers" in n for n in run.notes)


def _bar(n: int, total: int) -> str:
    return f"{n * 100 // total:3d}%|###| {n}/{total} [00:{n:02d}<00:10,  1.00s/it]"


def test_steps_from_the_closing_summary_when_stdout_was_buffered(tmp_path):
    # tqdm's bar (stderr) came out in one blob ahead of the buffered dicts: the summary's
    # runtime x steps/s (12 steps) over 4 training dicts says one log every 3 steps.
    bars = "\r".join(_bar(n, 12) for n in range(13))
    dicts = "".join(f"{{'loss': 0.{k}, 'reward': {k}.0, 'epoch': 0.0}}\n" for k in range(1, 5))
    summary = ("{'train_runtime': 24.02, 'train_samples_per_second': 2.0, "
               "'train_steps_per_second': 0.5, 'train_loss': 0.2, 'epoch': 0.01}\n")
    (run,) = load_runs(write(tmp_path / "run.log", bars + "\n" + dicts + summary))
    assert list(run.frame.index) == [3, 6, 9, 12]
    assert any("4 log lines over its 12 steps (one every 3 steps)" in n for n in run.notes)


def test_steps_inferred_one_a_step_say_so_in_words(tmp_path):
    """The note said "(one every 1)"."""
    bars = "\r".join(_bar(n, 4) for n in range(5))
    dicts = "".join(f"{{'loss': 0.{k}, 'reward': {k}.0, 'epoch': 0.0}}\n" for k in range(1, 5))
    summary = ("{'train_runtime': 8.0, 'train_samples_per_second': 2.0, "
               "'train_steps_per_second': 0.5, 'train_loss': 0.2, 'epoch': 0.01}\n")
    (run,) = load_runs(write(tmp_path / "run.log", bars + "\n" + dicts + summary))
    assert list(run.frame.index) == [1, 2, 3, 4]
    assert any("4 log lines over its 4 steps (one every step)" in n for n in run.notes)


def test_a_summary_that_does_not_divide_is_not_used(tmp_path):
    dicts = "".join(f"{{'loss': 0.{k}, 'reward': {k}.0}}\n" for k in range(1, 4))
    summary = "{'train_runtime': 10.0, 'train_steps_per_second': 1.0, 'epoch': 1.0}\n"
    (run,) = load_runs(write(tmp_path / "run.log", dicts + summary))
    assert list(run.frame.index) == [1, 2, 3]  # 10 steps over 3 dicts: not every N
    assert any("log-line numbers" in n for n in run.notes)


def test_the_bar_before_each_dict_is_its_step(tmp_path):
    # The Trainer advances the bar to step N, then prints step N's dict; one dict came out
    # before the next bar was flushed and repeats the last bar (step 4 then 4): it is 6.
    text = ""
    for step, shown in ((2, 2), (4, 4), (6, 4), (8, 8)):
        text += "\r".join(_bar(n, 8) for n in range(shown - 1, shown + 1)) + "\n"
        text += f"{{'loss': 0.{step}, 'reward': {step}.0}}\n"
    (run,) = load_runs(write(tmp_path / "run.log", text))
    assert list(run.frame.index) == [2, 4, 6, 8]


def test_sft_before_grpo_and_two_trainings_in_one_log(tmp_path):
    sft = "".join(f"{{'loss': 2.{k}, 'grad_norm': 1.0, 'learning_rate': 1e-5}}\n"
                  for k in range(3))
    end = "{'train_runtime': 3.0, 'train_steps_per_second': 1.0, 'epoch': 1.0}\n"
    grpo = "".join(f"{{'loss': 0.{k}, 'reward': {k}.0, 'kl': 0.1}}\n" for k in range(1, 3))
    (run,) = load_runs(write(tmp_path / "one.log", sft + end + grpo))
    assert run.n_steps == 2 and "reward_mean" in run.mapping
    assert any("3 log lines of an earlier training without RL metrics" in n
               for n in run.notes)
    # The run had its SFT: the advice does not ask for an SFT warm-up (helper-42).
    assert run.config.get("sft_before") is True
    first, second = load_runs(write(tmp_path / "two.log", grpo + end + grpo + grpo))
    assert (first.name, second.name) == ("two#1", "two#2")
    assert (first.n_steps, second.n_steps) == (2, 4)


def test_step_keys_and_ms_swift_progress(tmp_path):
    path = write(tmp_path / "run.log",
                 "{'step': 7, 'loss': 0.1}\n{'step': 9, 'loss': 0.2}\n")
    assert list(load_runs(path)[0].frame.index) == [7, 9]
    swift = write(tmp_path / "swift.log",
                  '{"loss": 0.1, "kl": NaN, "global_step/max_steps": "300/1296", '
                  '"elapsed_time": "20h 20m"}\n')
    (run,) = load_runs(swift)
    assert list(run.frame.index) == [300] and list(run.nan_steps["kl"]) == [300]


def test_transformers5_string_values(tmp_path):
    path = write(tmp_path / "run.log", "{'loss': '0.1234', 'grad_norm': 'nan', 'epoch': '1'}\n")
    (run,) = load_runs(path)
    assert run.frame["loss"].iloc[0] == 0.1234
    assert "grad_norm" in run.nan_steps


# --- tables and key: value blocks ---------------------------------------------------------------


def test_pipe_tables_are_merged_by_step(tmp_path):
    path = write(tmp_path / "paste.txt",
                 "Step | Training Loss | reward | kl | entropy\n"
                 "1 | -0.28 | 13.4 | nan | 0\n2 | -0.14 | 6.9 | nan | No Log\n"
                 "Step | Training Loss | reward | completions / mean_length | kl\n"
                 "1 | -0.28 | 13.4 | 1115.4 | nan\n")
    (run,) = load_runs(path)
    assert list(run.frame.index) == [1, 2]
    assert run.frame.loc[1, "response_length_mean"] == 1115.4
    assert np.isnan(run.frame.loc[2, "entropy"]) and "entropy" not in run.nan_steps
    assert list(run.nan_steps["kl"]) == [1, 2]
    assert run.restarts == 0



def test_a_table_aligned_with_spaces_is_read(tmp_path):
    """A progress table pasted from a terminal, its columns aligned with spaces and a "..."
    row where the paste was shortened (trl#5697's shape): it exited 2, "format not
    recognised", while the same rows with tabs read fine. A printed DataFrame's index column
    is dropped."""
    path = write(tmp_path / "paste.txt",
                 "Step  loss  grad_norm  reward_mean  clipped_ratio  mean_length\n"
                 "1     0     0          0            1.0            256\n"
                 "2     0     0          0            1.0            256\n"
                 "...\n"
                 "10    0     0          0            1.0            256\n")
    (run,) = load_runs(path)
    assert list(run.frame.index) == [1, 2, 10]
    assert list(run.frame["truncation_ratio"]) == [1.0, 1.0, 1.0]
    assert run.mapping["response_length_mean"] == "mean_length"
    frame = write(tmp_path / "frame.txt",
                  "   step  Training Loss    reward\n0     10       0.25  0.100\n"
                  "1     20       0.20  0.150\n2     30       0.10  0.200\n")
    (run,) = load_runs(frame)
    assert list(run.frame.index) == [10, 20, 30]
    assert list(run.frame["reward_mean"]) == [0.1, 0.15, 0.2]
    # Prose that happens to begin with "Step" is no table.
    with pytest.raises(GrpoDoctorError):
        load_runs(write(tmp_path / "prose.txt", "Step  one  was  slow\nthen it was fine\n"))


def test_a_printed_dict_wrapped_at_column_0_keeps_every_key(tmp_path):
    """A Trainer dict wrapped over lines that begin at column 0 (unsloth#3485's paste): only
    the first line's keys were read (no reward, no zero-std share), with a note that printed
    dicts "were cut off"."""
    one = ("{'loss': 0.0, 'grad_norm': 0.0, 'learning_rate': 3e-08, \n"
           "'rewards/json_format_reward_func/mean': 1.0, \n"
           "'reward': 4.0, 'reward_std': 0.0, 'frac_reward_zero_std': 1.0, 'epoch': 0.01}\n")
    (run,) = load_runs(write(tmp_path / "wrapped.txt", one * 3))
    assert run.n_steps == 3
    assert list(run.frame["zero_std_fraction"]) == [1.0, 1.0, 1.0]
    assert list(run.frame["reward_component/json_format_reward_func"]) == [1.0, 1.0, 1.0]
    assert not any("cut off" in n for n in run.notes), run.notes


def test_mlx_lm_grpo_iter_lines_are_read(tmp_path):
    """mlx-lm's GRPO trainer prints "Iter N: Train loss ..., Total rewards mean ..., KL ...,
    NAME mean ..." lines and validation lines at the same iteration (mlx-examples#1233): the
    file read as a CSV whose columns "hold only text" (exit 2)."""
    val = ("Iter 1: Val loss 0.000, Val total_rewards_mean 0.000, Val kl 0.000, "
           "Val took 37.389s\n")
    train = ("Iter {k}: Train loss 0.000, Total rewards mean {r}, Total rewards std 0.000, "
             "Grouped rewards std 0.000, KL 0.001, r1_accuracy_reward_func mean {r}, "
             "r1_accuracy_reward_func std 0.000, Learning Rate 1.000e-05, It/sec 0.049, "
             "Peak mem 32.940 GB\n")
    path = write(tmp_path / "mlx.log", val + "".join(
        train.format(k=k, r=0.25 if k == 2 else 0.0) for k in range(1, 6)))
    (run,) = load_runs(path)
    assert list(run.frame.index) == [1, 2, 3, 4, 5]
    assert list(run.frame["reward_mean"]) == [0.0, 0.25, 0.0, 0.0, 0.0]
    assert run.frame.loc[1, "val/total_rewards_mean"] == 0.0
    assert {"kl", "learning_rate", "group_reward_std", "loss"} <= set(run.mapping)
    assert run.mapping["reward_component/r1_accuracy_reward_func"] == \
        "rewards/r1_accuracy_reward_func/mean"


def test_trl_ppo_dicts_are_read_with_the_per_token_entropy_and_no_summed_kl(tmp_path):
    """TRL's PPO and RLOO trainers print 'objective/kl', 'objective/scores' and 'lr': the
    dicts were read as a CSV of text (exit 2). objective/kl and objective/entropy are sums
    over each response's tokens: the per-token entropy is read, the summed KL is not (6.8 at
    the first step read as a KL blow-up)."""
    row = ("{{'objective/kl': {kl}, 'objective/entropy': 114.4, 'objective/scores': 2.36, "
           "'policy/entropy_avg': 1.11, 'lr': 9.2e-06, 'episode': {k}}}\n")
    path = write(tmp_path / "ppo.txt", "".join(row.format(kl=6.8 + k, k=96 * k)
                                               for k in range(1, 9)))
    (run,) = load_runs(path)
    assert run.n_steps == 8 and run.mapping["entropy"] == "policy/entropy_avg"
    assert "kl" not in run.mapping and "objective/kl" in run.unmapped
    from grpo_doctor.engine import diagnose

    notes = diagnose(run).notes  # said once, so "log kl" is not read as an oversight
    assert any(n.startswith("objective/kl: TRL's PPO and RLOO sum it") for n in notes), notes


def test_openrlhf_status_lines_and_bars_give_the_global_step(tmp_path):
    """OpenRLHF's trainer logs "✨ Global step 12: {...}" beside an Episode bar that counts
    prompts (steps 8, 16, ... were read from the bar); before mid-2025 it showed its status
    only as the Episode bar's postfix, "policy_loss=0.0123, kl=..., reward=...", beside each
    PPO epoch's bar of micro-batches with short names (pg, rm, glen): that log read as a CSV
    of text (exit 2)."""
    status = ("{{'policy_loss': 0.01, 'actor_lr': 5e-07, 'kl': {kl}, 'reward': {r}, "
              "'response_length': 300, 'response_clip_ratio': 0.01}}")
    lines = []
    for k in range(1, 6):
        lines.append(f"2025-06-01 [INFO] ppo_trainer: ✨ Global step {k}: "
                     + status.format(kl=0.001 * k, r=k / 10))
        lines.append(f"Episode [1/1]:  {k}%|█   | {8 * k}/800 [00:0{k}<01:00, reward=0.3]")
    (run,) = load_runs(write(tmp_path / "new.log", "\n".join(lines) + "\n"))
    assert list(run.frame.index) == [1, 2, 3, 4, 5]
    assert list(run.frame["reward_mean"]) == [0.1, 0.2, 0.3, 0.4, 0.5]
    old = []
    for k in range(1, 6):
        old += [f"Train epoch [1/1]:  {25 * mb}%|██▌  | {mb}/4 [00:01<00:03, pg=0.01, rm=0.3, "
                f"glen=300, kl=0.0001, act_lr=5e-7]" for mb in range(1, 5)]
        old.append(f"Episode [1/1]:  {k}%|▎   | {k}/128 [00:0{k}<2:41:10, 78.0s/it, "
                   f"policy_loss=0.0123, kl={0.001 * k:.3g}, reward={0.1 * k:.3g}, "
                   f"response_length=312, actor_lr=5e-07]")
    (run,) = load_runs(write(tmp_path / "old.log", "\r".join(old) + "\n"))
    assert run.format == "console" and list(run.frame.index) == [1, 2, 3, 4, 5]
    assert list(run.frame["reward_mean"]) == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert run.mapping["loss"] == "policy_loss" and "pg" not in run.frame.columns


def test_slime_rollout_and_train_dicts_are_one_run(tmp_path):
    """slime logs "rollout 3: {'rollout/raw_reward': ...}" (its rollout/rewards are the
    group-normalised ones), "step 3: {'train/grad_norm': ...}" and a "perf 3: {...}" of
    timings: the log read as a CSV of text (exit 2, trial 50)."""
    lines = []
    for k in range(5):
        lines += [f"[10:0{k}:00] rollout_metrics.py:268 - perf {k}: {{'perf/rollout_time': 50.1}}",
                  f"[10:0{k}:01] train_metric_utils.py:136 - rollout {k}: "
                  f"{{'rollout/response_lengths': {800 + k}.5, 'rollout/rewards': 0.0, "
                  f"'rollout/truncated': 0.25, 'rollout/raw_reward': {k / 10}, "
                  f"'rollout/log_probs': -0.3}}",
                  f"[10:0{k}:02] model.py:918 - step {k}: {{'train/loss': 0.01, "
                  f"'train/entropy_loss': 0.5, 'train/kl_loss': 0.001, 'train/grad_norm': "
                  f"{k + 1}.0, 'train/lr-pg_0': 1e-06, 'train/step': {k}}}"]
    (run,) = load_runs(write(tmp_path / "slime.log", "\n".join(lines) + "\n"))
    assert run.format == "console" and list(run.frame.index) == [0, 1, 2, 3, 4]
    assert list(run.frame["reward_mean"]) == [0.0, 0.1, 0.2, 0.3, 0.4]
    assert list(run.frame["grad_norm"]) == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert run.mapping["reward_mean"] == "rollout/raw_reward"
    assert run.mapping["learning_rate"] == "train/lr-pg_0"
    assert run.mapping["truncation_ratio"] == "rollout/truncated"
    assert run.mapping["log_prob_mean"] == "rollout/log_probs"


def test_a_printed_dict_that_lost_its_opening_brace_is_read(tmp_path):
    """A thread's paste began at the dict's first key ("'loss': -0.0, 'grad_norm': 0.0,
    ...}", ms-swift#5571): "the CSV has a header but no rows" (exit 2)."""
    line = ("'loss': -0.0, 'grad_norm': 0.0, 'learning_rate': 2.6e-07, 'reward': {r}, "
            "'reward_std': 0.44, 'global_step/max_steps': '{k}/3766', 'percentage': '0.13%'}}")
    text = "\n".join(line.format(r=0.3 + k / 100, k=k) for k in range(5, 8)) + "\n"
    (run,) = load_runs(write(tmp_path / "swift.log", text))
    assert run.format == "console" and list(run.frame.index) == [5, 6, 7]
    assert list(run.frame["reward_mean"]) == [0.35, 0.36, 0.37]
    # Text that only looks like it: a line of key-value pairs without a closing brace.
    with pytest.raises(GrpoDoctorError):
        load_runs(write(tmp_path / "notes.log", "'a': 1, 'b': 2\n'c': 3, 'd': 4\n"))


def test_nemo_rl_step_blocks_are_read(tmp_path):
    """NeMo-RL's GRPO prints a block per step ("===== Step 3/100 =====", "📊 Training
    Results:", "  • Avg Reward: 0.45", "⏱️  Timing:") and its validation apart: the log
    read as "file format not recognised" (exit 2)."""
    out = ["▶ Starting validation at step 0...", "", "📊 Validation Results:",
           "    • Accuracy: 0.2000", "    • Average response length: 480.0 tokens"]
    for k in range(1, 5):
        out += ["", f"{'=' * 25} Step {k}/100 {'=' * 25}", "▶ Generating responses...", "",
                "📊 Training Results:", f"  • Loss: {0.01 * k:.4f}",
                "  • Generation KL Error: 0.0012", f"  • Avg Reward: {k / 10:.4f}",
                "  • Mean Generation Length: 512.0000", "", "⏱️  Timing:",
                "  • Total step time: 61.00s", "  • generation: 30.10s (49.3%)"]
    (run,) = load_runs(write(tmp_path / "nemo.log", "\n".join(out) + "\n"))
    assert run.format == "console" and list(run.frame.index) == [0, 1, 2, 3, 4]
    assert list(run.frame["reward_mean"].dropna()) == [0.1, 0.2, 0.3, 0.4]
    assert run.frame.loc[0, "heldout_score"] == 0.2
    assert {"loss", "response_length_mean", "mismatch_kl"} <= set(run.mapping)

def test_markdown_table_with_bold_cells(tmp_path):
    path = write(tmp_path / "report.md",
                 "| step | grad_norm | score |\n|------|------|------|\n"
                 "| 89 | 0.10 | 0.41 |\n| **90** | **NaN** | 0.43 |\n| 91+ | NaN | 0.0 |\n")
    (run,) = load_runs(path)
    assert list(run.frame.index) == [89, 90]
    assert list(run.nan_steps["grad_norm"]) == [90]


def test_key_value_blocks_are_the_last_resort(tmp_path):
    path = write(tmp_path / "blocks.txt",
                 "Reward Metrics:\n   reward: 0.5\n   kl: 0.01\n... and 7 more\n"
                 "   reward: 0.6\n   kl: 0.02\n")
    (run,) = load_runs(path)
    assert list(run.frame["reward_mean"]) == [0.5, 0.6]
    assert any("key: value" in n for n in run.notes)


# --- detection and bad input --------------------------------------------------------------------


@pytest.mark.parametrize("name,text,score", [
    ("a.log", "x\nstep:1 - critic/score/mean:0.1\n", 90),
    ("a.dat", "x\nstep:1 - critic/score/mean:0.1\n", 85),
    ("a.md", "{'loss': 0.1, 'grad_norm': 2.0}\n", 85),
    ("a.dat", "prefix {'epoch': 1, 'kl': 0.1}\n", 80),
    ("a.txt", "Step | Training Loss | reward\n1 | 0.1 | 0.2\n", 70),
    ("a.csv", "step:1 - critic/score/mean:0.1\n", 0),
    ("a.log", "nothing to see\n", 0),
])
def test_sniff(tmp_path, name, text, score):
    path = write(tmp_path / name, text)
    assert IMPORTER.sniff(path, path.read_bytes()) == score


def test_no_metrics_is_a_one_line_format_error(tmp_path):
    path = write(tmp_path / "empty.log", "hello\nworld\n{'bos_token_id': None}\n")
    with pytest.raises(FormatError, match=r"empty\.log: no metric lines found"):
        IMPORTER.load(path, LoadOptions())


def test_garbage_bytes(tmp_path):
    path = tmp_path / "garbage.log"
    path.write_bytes(bytes(range(256)) * 64)
    assert IMPORTER.sniff(path, path.read_bytes()[:65536]) == 0
    with pytest.raises(FormatError, match=r"garbage\.log"):
        IMPORTER.load(path, LoadOptions())


_LOG_BITS = st.sampled_from([
    "step:", "1", " - ", "a/b:", "0.5", "nan", "(1e-4)", ":", "{", "}", "'loss'", "': ",
    "[", "]", ",", "|", "Step", "\n", "\r", "\x1b[2m", "(main_task pid=1) ", " 10/43 [", "'",
    '"', "inf", "=", "logging_steps=", "__import__('os')", "\t", "**", "No Log", "-",
])


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_LOG_BITS | st.text(max_size=8), max_size=60).map("".join))
def test_arbitrary_text_parses_or_fails_cleanly(tmp_path, text):
    path = tmp_path / "fuzz.log"
    path.write_text(text, encoding="utf-8", errors="replace")
    parse_console(text)
    with contextlib.suppress(GrpoDoctorError):
        IMPORTER.load(path, LoadOptions())


@pytest.mark.parametrize("text", [
    "{'" * 300_000,
    "{'a': 1, " * 60_000,
    "\n".join(["{'a': 1,"] * 20_000),
    "x " + "'kl': " * 100_000,
], ids=["dict-starts", "one-long-cut-dict", "open-dict-lines", "keys-without-dicts"])
def test_hostile_shapes_stay_linear(tmp_path, text):
    path = write(tmp_path / "big.log", text)
    start = time.perf_counter()
    IMPORTER.sniff(path, path.read_bytes()[:65536])
    with contextlib.suppress(GrpoDoctorError):
        IMPORTER.load(path, LoadOptions())
    assert time.perf_counter() - start < 10  # about 0.5 s when linear; minutes when not


@pytest.mark.parametrize(("line", "size"), [
    ("Model: Qwen/Qwen2.5-7B-Instruct", 7e9),
    ("cache/hub/models--Qwen--Qwen2.5-VL-3B-Instruct/snapshots/a09a", 3e9),
    ("Could not find a config file in Qwen/Qwen3.5-9B - will assume", 9e9),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", 1.5e9),
    ("unsloth/gpt-oss-20b-BF16", 20e9),
    ("Qwen/Qwen3-30B-A3B", 30e9),  # a mixture of experts: all its weights
    (" 38%|###8      | 75/200 [04:56<07:22,  3.54s/it]", None),
    ("results/sweep_coarse/rho1.00_seed42/checkpoint-100", None),
    ("Qwen/Qwen2.5-Instruct", None),
])
def test_a_model_id_gives_the_models_size(line, size):
    from grpo_doctor.importers.console_text import model_params

    assert model_params(line) == size


@pytest.mark.parametrize(("trainable", "lora"), [(161_480_704, True), (7_615_616_512, False),
                                                 (6_000_000_000, False)])
def test_an_adapter_is_told_from_a_full_fine_tune_by_the_share_it_trains(tmp_path, trainable,
                                                                          lora):
    """A log that trains 2% of a 7B model is a LoRA adapter; one that trains all of it, or
    all but the embeddings, is not."""
    from grpo_doctor import recipe
    from grpo_doctor.importers import load_run

    log = tmp_path / "train.log"
    lines = ["Loading model: Qwen/Qwen2.5-7B-Instruct (bf16)",
             f"  Number of trainable parameters = {trainable:,}"]
    lines += [f"{{'loss': 0.1, 'reward': {0.1 * i:.1f}, 'learning_rate': 1e-05, "
              f"'epoch': {i / 10}}}" for i in range(1, 6)]
    log.write_text("\n".join(lines) + "\n")
    assert recipe.read_config(load_run(log).config).lora is lora


#: What OpenRLHF's example scripts echo under ``set -x`` (the flags of its README), and the
#: arguments it prints whole (argparse's Namespace repr).
OPENRLHF_LAUNCH = (
    "+ ray job submit --address=http://127.0.0.1:8265 --runtime-env-json='{\"working_dir\": "
    "\"/openrlhf\"}' -- python3 -m openrlhf.cli.train_ppo_ray --pretrain Qwen/Qwen2.5-1.5B "
    "--actor_learning_rate 5e-5 --init_kl_coef 0.001 --n_samples_per_prompt 2 "
    "--generate_max_len 1024 --advantage_estimator group_norm --bf16 --flash_attn\n")
OPENRLHF_NAMESPACE = (
    "Namespace(actor_learning_rate=5e-05, adam_betas=(0.9, 0.95), advantage_estimator="
    "'group_norm', init_kl_coef=0.001, n_samples_per_prompt=2, temperature=1.0, "
    "generate_max_len=1024, max_norm=1.0, eps_clip=0.2, reward_pretrain=None, "
    "dataloader=<object at 0x7f>, bf16=True)\n")


@pytest.mark.parametrize("head", [OPENRLHF_LAUNCH, OPENRLHF_NAMESPACE])
def test_a_launch_echoed_or_its_arguments_printed_are_the_runs_config(tmp_path, head):
    """OpenRLHF's launch under ``set -x`` and argparse's ``Namespace(...)``: their settings
    are the run's, each a literal (an object's repr is left out, never evaluated); a later
    launch in the same log does not override the first; a line naming python with one flag,
    or flags with no launcher, is no launch."""
    lines = "".join(f"{{'policy_loss': 0.01, 'reward': {0.2 + i / 100:.3f}, 'kl': 0.01}}\n"
                    for i in range(1, 41))
    later = "python3 eval.py --actor_learning_rate 1e-3 --n_samples_per_prompt 64\n"
    path = write(tmp_path / "train.log", head + lines + later)
    (run,) = load_runs(path)
    config = run.config
    assert config["actor_learning_rate"] == 5e-5 and config["init_kl_coef"] == 0.001
    assert config["n_samples_per_prompt"] == 2 and config["generate_max_len"] == 1024
    assert config["bf16"] is True and "dataloader" not in config
    reading = recipe.read_config(config)
    assert reading.get("num_generations").verdict == recipe.LOW
    assert reading.get("beta").verdict == recipe.LOW


def test_a_line_that_only_looks_like_a_launch_gives_no_setting():
    from grpo_doctor.importers.command_line import launch_flags, printed_namespace

    assert launch_flags("python train.py --help") == {}
    assert launch_flags("see --learning_rate 1 --beta 2 in the docs") == {}
    assert launch_flags("torchrun --nproc_per_node 8 train.py --learning_rate 1e-6") == {
        "nproc_per_node": 8, "learning_rate": 1e-6}
    assert printed_namespace("Namespace(a=1, b=__import__('os').system('x'))") == {"a": 1}
    assert printed_namespace("Namespace(a=" + "[" * 5000 + "]" * 5000 + ")") == {}
    assert printed_namespace("no namespace here") == {}


def test_printed_training_arguments_are_the_runs_config(tmp_path):
    """``print(training_args)`` before training (TrainingArguments.__str__, one ``key=value,``
    per line; the fixture is real trl's output) gives every setting; a vLLM SamplingParams
    repr printed later is not the rollout's temperature."""
    printed = (FIXTURES / "training_args" / "printed_grpo_config.txt").read_text()
    lines = "".join(f"{{'loss': 0.0, 'reward': {0.2 + i / 100:.3f}, 'kl': 0.01, "
                    f"'epoch': {i / 40:.3f}}}\n" for i in range(1, 41))
    later = "SamplingParams(n=1, temperature=0.7, top_p=0.95, max_tokens=64)\n"
    path = write(tmp_path / "train.log", printed + lines + later)
    (run,) = load_runs(path)
    config = run.config
    assert config["learning_rate"] == 3e-3 and config["temperature"] == 2.0
    assert config["num_generations"] == 4 and config["max_completion_length"] == 64
    assert config["max_grad_norm"] == 1.0 and config["bf16"] is False
    assert run.n_steps == 40


def test_sampling_and_clipping_settings_printed_as_key_value_are_the_runs(tmp_path):
    """A script's own print of its settings (``RUN lr=... temperature=3.0 beta=-2.0``): the
    beta had been read, the temperature on the same line passed over (trial 64)."""
    from grpo_doctor.importers import load_runs

    log = tmp_path / "console.log"
    log.write_text("RUN learning_rate=0.0001 temperature=3.0 top_p=0.9 num_iterations=4 "
                   "epsilon_high=0.28 beta=-2.0\n" + "".join(
                       f"{{'loss': 0.0, 'reward': {0.01 * s}, 'kl': 0.0, 'epoch': {s / 100}}}\n"
                       for s in range(1, 30)))
    config = load_runs(log)[0].config
    assert {k: config.get(k) for k in ("temperature", "top_p", "num_iterations",
                                       "epsilon_high", "beta")} == {
        "temperature": 3.0, "top_p": 0.9, "num_iterations": 4, "epsilon_high": 0.28,
        "beta": -2.0}
