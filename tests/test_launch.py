# ruff: noqa: E501  (the console text is TRL's own, line for line)
"""A launch that stopped before its first logged step: the traceback its console shows is the
report (trial 60: "not a training log", "holds 2 training logs", and a --map example naming a
profiling timing as the reward).

The console texts are TRL 1.16's own output, shortened (trial 60's startup_error and
reward_typeerror runs).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grpo_doctor import audit as auditing
from grpo_doctor.endings import ending_in
from tests.helpers import run_cli

CONFIG_REFUSED = """\
swanlab: Tracking run with swanlab version 0.10.3
Loading weights:   0%|          | 0/27 [00:00<?, ?it/s]Loading weights: 100%|██████████| 27/27 [00:00<00:00, 16874.71it/s]
swanlab: Error happened while training
Traceback (most recent call last):
  File "/home/me/train.py", line 1137, in <module>
    run(arg)
  File "/home/me/train.py", line 1065, in run
    cfg = GRPOConfig(**kw)
          ^^^^^^^^^^^^^^^^
  File "<string>", line 194, in __init__
  File "/venv/lib/python3.11/site-packages/trl/trainer/grpo_config.py", line 1132, in __post_init__
    raise ValueError(
ValueError: generation_batch_size (32) must be divisible by num_generations (3).
"""

REWARD_RAISED = """\
Loading weights:   0%|          | 0/27 [00:00<?, ?it/s]Loading weights: 100%|██████████| 27/27 [00:00<00:00, 16874.71it/s]
  0%|          | 0/200 [00:00<?, ?it/s]Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1626, in _calculate_rewards
    output_reward_func = reward_func(
                         ^^^^^^^^^^^^
  File "/home/me/train.py", line 929, in correctness_reward
    gold = answer["answer"]
           ~~~~~~^^^^^^^^^^
TypeError: list indices must be integers or slices, not str
"""


def _launch_folder(tmp_path: Path, console: str) -> Path:
    """A run's folder: the launch's console capture, and the tracker's own bookkeeping
    beside it (profiling timings: no training metric)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "console.log").write_text(console, encoding="utf-8")
    (run / "metrics.csv").write_text("step,profiling/Time taken: GRPOTrainer.generate\n"
                                     "0,1.5\n", encoding="utf-8")
    return run


def _errors_of_each(capsys: pytest.CaptureFixture[str], run: Path) -> list[str]:
    """``diagnose`` of the folder, its capture and its tracker log: each one line on stderr,
    exit 2, nothing on stdout."""
    errors = []
    for target in (run, run / "console.log", run / "metrics.csv"):
        code, out, err = run_cli(capsys, "diagnose", str(target))
        assert code == 2 and not out and err.count("\n") == 1, err
        errors.append(err)
    return errors


def test_a_library_frame_names_the_users_line_that_called_it() -> None:
    ending = ending_in(CONFIG_REFUSED)
    assert ending is not None
    assert ending.words() == (
        "ValueError: generation_batch_size (32) must be divisible by num_generations (3). "
        "(raised in __post_init__, grpo_config.py line 1132, called from run, train.py "
        "line 1065)")


def test_a_scripts_top_level_is_the_line_that_called_into_the_library() -> None:
    """helper-79: a flat train.py (the usual TRL script) calls from its top level, which the
    pointer had left out."""
    ending = ending_in('Traceback (most recent call last):\n'
                       '  File "/home/me/train_grpo.py", line 88, in <module>\n'
                       '    trainer = GRPOTrainer(model)\n'
                       '  File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py",'
                       ' line 1340, in to\n'
                       'torch.OutOfMemoryError: CUDA out of memory.\n')
    assert ending is not None and ending.words().endswith(
        "(raised in to, module.py line 1340, called from train_grpo.py line 88)")


@pytest.mark.parametrize("text, said", [
    (CONFIG_REFUSED, "ValueError: generation_batch_size (32) must be divisible by "
                     "num_generations (3)."),
    (REWARD_RAISED, "TypeError: list indices must be integers or slices, not str (raised in "
                    "correctness_reward, train.py line 929)"),
])
def test_a_launch_that_failed_says_its_error_for_the_capture_or_its_folder(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, said: str) -> None:
    run = _launch_folder(tmp_path, text)
    for err in _errors_of_each(capsys, run):
        assert "console.log: the run stopped before its first logged step, on an error: " in err
        assert said in err and "fix it and launch again" in err
    # Audited, the capture is the row that says it.
    res = auditing.audit([str(run)], jobs=1)
    assert any(e.source == "console.log" and said in e.error for e in res.errors), res.errors


def test_a_run_that_logged_then_crashed_is_read_not_refused(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Metric lines before the traceback: a run that stopped, diagnosed as one (its ending
    said), never "stopped before its first logged step"."""
    rows = "".join(f"{{'loss': 0.0, 'reward': {0.2 + i / 100:.3f}, 'entropy': 0.3, "
                   f"'epoch': {i / 100:.2f}}}\n" for i in range(1, 41))
    (tmp_path / "console.log").write_text(rows + REWARD_RAISED, encoding="utf-8")
    code, out, err = run_cli(capsys, "diagnose", str(tmp_path / "console.log"))
    assert code in (0, 1) and "before its first logged step" not in out + err
    assert "TypeError: list indices" in out


def test_timings_alone_are_no_metric_to_map(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    """With no console beside it, a log of profiling timings is said to hold no training
    metric, never answered with "--map reward_mean=profiling/Time taken: ..."."""
    log = tmp_path / "metrics.csv"
    log.write_text("step,profiling/Time taken: GRPOTrainer.generate,system/memory\n"
                   "0,1.5,3\n1,1.4,3\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "diagnose", str(log))
    assert code == 2 and "--map" not in err
    assert "no training metric logged, only timings and system values" in err


KILLED_QUIETLY = """\
Loading weights: 100%|██████████| 27/27 [00:00<00:00, 7095.63it/s]
/venv/lib/python3.11/site-packages/transformers/training_args.py:1541: FutureWarning: `gradient_checkpointing` is deprecated
  warnings.warn(f"`{old}` is deprecated", FutureWarning)
2026/12/07 04:59:44 INFO mlflow.store.db.utils: Creating initial MLflow database tables...
"""


def test_a_process_killed_before_its_first_log_is_said_as_such(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Trial 61: SIGKILL after the first optimizer step, nothing printed: the console ends in
    the launch's warnings, the tracker holds only profiling timings. It read "holds 2
    training logs: diagnose one of them", and the console "no numbers in any metric
    column" (a progress bar taken for a table)."""
    run = _launch_folder(tmp_path, KILLED_QUIETLY)
    for err in _errors_of_each(capsys, run):
        assert ("no training step was logged, and console.log ends with no error and no end "
                "of training: the process stopped before its first log") in err
        assert "exit status 137" in err
    # Notes in a folder are no launch; a real log beside the capture is read.
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "notes.txt").write_text("what I tried today\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "diagnose", str(notes))
    assert code == 2 and "no training log found" in err
    (run / "metrics.csv").write_text("step,reward,entropy\n" + "".join(
        f"{s},{0.2 + s / 100},0.5\n" for s in range(1, 41)), encoding="utf-8")
    code, out, _ = run_cli(capsys, "diagnose", str(run / "metrics.csv"))
    assert code in (0, 1) and "steps 1–40" in out


def test_a_reward_functions_key_error_asks_for_the_dataset_column(tmp_path: Path) -> None:
    """Trial 61: ``kwargs["answer"]`` on a dataset whose column was renamed ``solution``."""
    from grpo_doctor.importers.launch import launch_error

    log = tmp_path / "console.log"
    log.write_text(KILLED_QUIETLY + 'Traceback (most recent call last):\n'
                   '  File "/home/me/train.py", line 965, in correctness_reward\n'
                   '    gold = kwargs["answer"]\n'
                   "KeyError: 'answer'\n", encoding="utf-8")
    failed = launch_error(log)
    assert failed is not None and ("(the trainer hands each dataset column to the reward "
                                   "functions by name: does the dataset have a column "
                                   "'answer'?)") in str(failed)
    # Not said of a KeyError raised elsewhere.
    log.write_text(log.read_text().replace("correctness_reward", "load_config"))
    assert "dataset column" not in str(launch_error(log))


def test_watch_says_a_failed_launch_as_diagnose_does(capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    """helper-79: ``watch --once`` on a failed launch's console was an internal error (a
    progress bar's bare CRs and commas, read as a CSV header) or "not a training log"; and
    without ``--once`` it waited for data forever. The traceback is the answer, said once the
    log stays quiet (at once with ``--once``)."""
    log = tmp_path / "cr.log"
    log.write_text("\rLoading weights:   0%|  | 0/27 [00:00<?, ?it/s]\rLoading weights: 100%|"
                   "##| 27/27 [00:00<00:00, 24933.11it/s]\n" + CONFIG_REFUSED.split(
                       "swanlab: Error happened while training\n")[1], encoding="utf-8")
    code, _, err = run_cli(capsys, "watch", str(log), "--once")
    assert code == 2 and err.count("\n") == 1, err
    assert "the run stopped before its first logged step, on an error: ValueError" in err
    assert "grpo-doctor-watch-" not in err  # the user's path, not a copy's
    from grpo_doctor.errors import GrpoDoctorError
    from grpo_doctor.watch import Watcher

    watcher = Watcher(log)
    watcher.poll()  # just written: it may still be starting
    import os
    import time

    then = time.time() - 120
    os.utime(log, (then, then))
    with pytest.raises(GrpoDoctorError, match="before its first logged step"):
        watcher.poll()


def test_a_launch_the_shell_says_was_killed_is_not_nothing_printed(tmp_path: Path) -> None:
    """helper-79: bash's "Killed" after the launch's warnings read "stopped ... with nothing
    printed"."""
    from grpo_doctor.importers.launch import launch_error

    log = tmp_path / "console.log"
    log.write_text(KILLED_QUIETLY + "run.sh: line 3:  4242 Killed   python train.py\n",
                   encoding="utf-8")
    failed = launch_error(log)
    assert failed is not None and "the process was killed" in str(failed)
    assert "find what killed it" in str(failed) and "nothing printed" not in str(failed)
