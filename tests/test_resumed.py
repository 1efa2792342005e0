"""A run's launches (resumed from a checkpoint) read as the one run they are: the chain rule,
the join, the W&B importer, and ``audit`` (which reads each folder as a source of its own).

The W&B fixture was written by the real ``wandb`` package (scripts/make_fixtures_tb_wandb.py);
the TensorBoard folders by TensorBoard's own writer (``tests.importers.test_tensorboard``).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_doctor import audit as auditing
from grpo_doctor.endings import Ending
from grpo_doctor.importers import load_run, load_runs
from grpo_doctor.resumed import Span, chains, joined, with_resumed
from grpo_doctor.store import Run
from tests.importers.test_tensorboard import _scalars

FIX = Path(__file__).parent / "fixtures" / "wandb_resumed"


def _run(steps: range | list[int], value: float, *, name: str = "r",
         config: dict | None = None, ending: Ending | None = None) -> Run:
    index = pd.Index(list(steps), dtype="int64", name="step")
    frame = pd.DataFrame({"reward_mean": np.full(len(index), value)}, index=index)
    return Run(name=name, source=f"/x/{name}", format="tensorboard", frame=frame,
               config=config or {}, mapping={"reward_mean": "train/reward"}, ending=ending)


# --- the chain rule ------------------------------------------------------------------------


def test_a_launch_going_on_from_a_checkpoint_joins_the_run_it_resumes() -> None:
    names = ["Dec07_02-00-00_vm", "Dec07_02-10-00_vm"]
    assert chains(names, [Span(1, 120, 1), Span(101, 200, 1)]) == [[0, 1]]
    # Starting within two logging intervals after the last step: a run saved at its end.
    assert chains(names, [Span(10, 100, 10), Span(120, 200, 10)]) == [[0, 1]]
    # Further on, or from step 1 (a sweep, a run launched again): runs of their own.
    assert chains(names, [Span(10, 100, 10), Span(130, 200, 10)]) == [[0], [1]]
    assert chains(names, [Span(1, 100, 1), Span(1, 100, 1)]) == [[0], [1]]
    # A launch from step 0 at another logging interval (helper-77: logging_steps 5, then a
    # fresh run at 10) is another run; a resume logs at the run's own interval.
    assert chains(names, [Span(5, 100, 5), Span(10, 200, 10)]) == [[0], [1]]
    assert chains(names, [Span(5, 100, 5), Span(105, 200, 20)]) == [[0], [1]]


def test_launch_order_comes_from_the_folder_names_where_all_have_one() -> None:
    """Resumed twice from checkpoint-100 (the first resume crashed too): the last launch
    replaces the second from step 101 on, whatever its steps."""
    names = ["offline-run-20250102_000000-a", "offline-run-20250102_001000-b",
             "offline-run-20250102_002000-c"]
    spans = [Span(1, 120, 1), Span(101, 150, 1), Span(101, 200, 1)]
    assert chains(names, spans) == [[0, 1, 2]]
    # Listed in another order, the names still say which ran last.
    assert chains(names[::-1], spans[::-1]) == [[2, 1, 0]]


def test_a_launch_two_runs_could_claim_joins_neither_unless_the_config_says_which() -> None:
    names = ["run-a", "run-b", "run-c"]
    spans = [Span(1, 100, 1), Span(1, 100, 1), Span(101, 200, 1)]
    assert chains(names, spans) == [[0], [1], [2]]
    assert chains(names, spans, ["out/a", "out/b", "out/b"]) == [[0], [1, 2]]
    # A launch of another output folder never joins.
    assert chains(names[:1] + names[2:], [spans[0], spans[2]], ["out/a", "out/b"]) == [[0], [1]]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 80), min_size=1, max_size=4), st.integers(1, 5))
def test_a_run_cut_into_launches_is_joined_back_whole(cuts: list[int], every: int) -> None:
    """Each launch resumes from a checkpoint at or before the previous one's last step; its
    re-logged steps carry other values. Joined, the run is the last launch's values from each
    launch's first step: the whole run, as one launch would have logged it."""
    steps = list(range(every, 401 * every, every))
    truth = np.arange(len(steps), dtype=float)
    parts, start = [], 0
    bounds = sorted({min(c * 4, len(steps) - 2) for c in cuts})
    for k, end in enumerate([*bounds, len(steps) - 1]):
        if end < start:
            continue
        relogged = min(end + 3, len(steps) - 1)  # crashed a little after its last checkpoint
        last = relogged if end < len(steps) - 1 else end
        frame_steps = steps[start:last + 1]
        values = truth[start:last + 1].copy()
        values[end + 1 - start:] += 1000  # steps the next launch logs again, differently
        run = _run(frame_steps, 0.0, name=f"Dec07_02-{k:02d}-00_vm")
        run.frame["reward_mean"] = values
        parts.append(run)
        start = end + 1
    if len(parts) < 2:
        return
    out = with_resumed(parts, [p.name for p in parts], "event folders", "out", "/x")
    assert len(out) == 1
    assert out[0].steps.tolist() == steps
    np.testing.assert_array_equal(out[0].frame["reward_mean"].to_numpy(), truth)


def test_the_join_says_its_launches_and_the_crash_between_them() -> None:
    crash = Ending("error", "KeyError: 'answer'", "correctness_reward, train.py line 120")
    first = _run(range(1, 121), 0.5, name="a", config={"learning_rate": 1e-4}, ending=crash)
    second = _run(range(101, 201), 0.7, name="b", config={"learning_rate": 1e-4, "seed": 2})
    run = joined([first, second], "out", "/x", ["a", "b"], "event folders")
    assert run.name == "out" and run.steps.tolist() == list(range(1, 201))
    assert run.frame.loc[110, "reward_mean"] == 0.7 and run.frame.loc[100, "reward_mean"] == 0.5
    assert run.notes[0] == ("one run resumed 1 time: 2 event folders read as one "
                            "(a: steps 1-120; b: steps 101-200)")
    assert "launch 1 of 2 stopped on an error after 120 logged steps (KeyError" in run.notes[1]
    # The run ended as its last launch did; the later launch's settings win.
    assert run.ending is None and run.config == {"learning_rate": 1e-4, "seed": 2}
    assert run.frame.index.dtype == np.int64 and run.frame.index.name == "step"


# --- the importers -------------------------------------------------------------------------


def test_wandb_launches_of_one_run_are_read_as_one_beside_another_run() -> None:
    """Two offline runs written by wandb for one Trainer run resumed from checkpoint-50, and
    another run beside them (trial 59: "holds 2 runs", and its second half read alone as "no
    progress")."""
    runs = {r.name: r for r in load_runs(FIX)}
    assert sorted(runs) == ["grpo-other", "wandb_resumed"]
    run = runs["wandb_resumed"]
    assert (run.first_step, run.last_step, run.n_steps) == (1, 100, 100)
    # Steps 51-60 were logged twice: the resumed launch's values are the run's.
    assert run.frame.loc[55, "reward_mean"] == pytest.approx(runs["grpo-other"].frame.loc[
        55, "reward_mean"])
    assert run.notes[0].startswith("one run resumed 1 time: 2 W&B runs read as one "
                                   "(offline-run-20250102_000000-grpores1: steps 1-60;")
    # wandb's latest-run link is not a run's name or source.
    assert all("latest-run" not in r.source for r in runs.values())
    # One launch asked for by name is read alone.
    assert load_run(FIX, run="grpores2").first_step == 51


def test_audit_reads_one_runs_launches_as_one_row_and_keeps_a_sweep_apart(
        tmp_path: Path) -> None:
    """``audit`` reads each event folder as a source: the two launches of ``out`` (a resume
    from checkpoint-100) had been two rows, the second a half run; a sweep's folders, each
    from step 1, stay rows of their own, keyed as before."""
    _scalars(tmp_path / "out" / "runs" / "Dec07_02-12-15_vm", range(1, 121), 0.5,
             1_700_000_000)
    _scalars(tmp_path / "out" / "runs" / "Dec07_02-12-39_vm", range(101, 201), 0.7,
             1_700_000_500)
    _scalars(tmp_path / "sweep" / "lr1", range(1, 101), 0.5, 1_700_000_000)
    _scalars(tmp_path / "sweep" / "lr2", range(1, 101), 0.6, 1_700_000_000)
    shutil.copytree(FIX, tmp_path / "wb", symlinks=True)
    res = auditing.audit([str(tmp_path)], jobs=2)
    rows = {(r.source, r.name): r for r in res.runs}
    assert sorted(rows) == [("out/runs", "out"), ("sweep/lr1", "lr1"), ("sweep/lr2", "lr2"),
                           ("wb/wandb", "wb"),
                           ("wb/wandb/offline-run-20250102_002000-grpoother", "grpo-other")]
    out = rows[("out/runs", "out")].record["run"]
    assert (out["first_step"], out["last_step"], out["n_steps"]) == (1, 200, 200)
    assert not res.errors
    assert all("_launch" not in r.record for r in res.runs)
    # Run in this process or in workers, the rows are the same.
    assert [(r.source, r.name) for r in auditing.audit([str(tmp_path)], jobs=1).runs] == [
        (r.source, r.name) for r in res.runs]


# --- a later launch read alone ---------------------------------------------------------------


@pytest.mark.parametrize("first", [1, 101])
def test_a_level_held_from_a_late_first_step_was_reached_before_the_log(first: int) -> None:
    """The second launch of a resumed run, read alone (the folder named, not its parent):
    a reward holding its level from step 101, groups mixed, the policy moving, had read
    WARNING "no progress: nothing the policy learned changed what the reward pays" (trial 59,
    audit). From step 1 that reading stands; from step 101 the level was learnt before."""
    from grpo_doctor.engine import diagnose
    from tests.helpers import make_run

    n = 150
    rng = np.random.default_rng(181)
    run = make_run(np.arange(first, first + n), train__reward=1.35 + rng.normal(0, 0.05, n),
                   train__frac_reward_zero_std=np.full(n, 0.1),
                   train__entropy=np.r_[np.full(7, 0.3), np.full(n - 7, 0.2)])
    d = diagnose(run)
    check = d.check("no_progress")
    late = [n for n in d.notes if "the log starts at step" in n]
    if first == 1:
        assert check.fired and "never left its level" in check.summary and not late
    else:
        assert not check.fired, check.summary
        assert "from step 101, where this log starts" in check.summary
        assert late == ["the log starts at step 101: the run's earlier steps are not in it (an "
                        "excerpt, or a launch resumed from a checkpoint: the folder holding "
                        "every launch reads them as one run)"]


# --- launches in one console log ---------------------------------------------------------------


def _dicts(steps: range, reward: float) -> str:
    """TRL 1.16's printed rows (strings, as it prints them), 0.002 of an epoch a step."""
    return "".join(
        f"{{'loss': '0.001', 'grad_norm': '0.5', 'learning_rate': '{1e-4 * (1 - s / 200):.4g}', "
        f"'rewards/correctness_reward/mean': '{reward:.3f}', 'reward': '{reward:.3f}', "
        f"'entropy': '0.2', 'frac_reward_zero_std': '0.1', 'epoch': '{s * 0.002:.3f}'}}\n"
        for s in steps)


_CRASH = """Traceback (most recent call last):
  File "/home/me/train.py", line 893, in correctness_reward
    gold = answer["answer"]
KeyError: 'answer'
"""
_END = ("{'train_runtime': '8.7', 'train_samples_per_second': '368', "
        "'train_steps_per_second': '11.5', 'train_loss': '-0.003', 'epoch': '0.2'}\n")


@pytest.mark.parametrize("first_launch", ["crashed at 120", "finished at 100"])
def test_launches_of_one_run_in_one_console_log_are_joined_at_their_epochs(
        tmp_path: Path, first_launch: str) -> None:
    """A console log appended to by a resume (`tee -a`): printed dicts carry no step, so each
    launch was numbered from line 1 and the log read "holds 2 runs" (trials 59, 60). The
    second launch's epochs (0.202 on its first row) put it at steps 101-200."""
    first = (_dicts(range(1, 121), 0.5) + _CRASH if first_launch == "crashed at 120"
             else _dicts(range(1, 101), 0.5) + _END)
    log = tmp_path / "console.log"
    log.write_text(first + _dicts(range(101, 201), 0.8), encoding="utf-8")
    (run,) = load_runs(log)
    assert (run.first_step, run.last_step, run.n_steps) == (1, 200, 200)
    assert run.frame.loc[110, "reward_mean"] == pytest.approx(0.8)
    assert run.notes[0].startswith("one run resumed 1 time: 2 launches in this log read as one")
    crashed = [n for n in run.notes if "stopped on an error" in n]
    assert bool(crashed) == (first_launch == "crashed at 120")
    assert not any(n.startswith("no step in the log") for n in run.notes[1:] if "#2" in n)


def test_a_launch_starting_over_in_one_console_log_is_another_run(tmp_path: Path) -> None:
    """Launched again from scratch (its epochs start over): two runs, as before."""
    log = tmp_path / "console.log"
    log.write_text(_dicts(range(1, 101), 0.5) + _END + _dicts(range(1, 101), 0.8),
                   encoding="utf-8")
    runs = load_runs(log)
    assert [(r.first_step, r.last_step) for r in runs] == [(1, 100), (1, 100)]


def test_a_writer_of_other_metrics_beside_the_run_is_not_a_resume(tmp_path: Path) -> None:
    """``logs/train`` and ``logs/eval`` written side by side: the eval writer's first step
    (50) falls inside the train writer's steps, but it logs other metrics; joined, the train
    metrics after step 50 would be lost."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    _scalars(tmp_path / "logs" / "train", range(1, 201), 0.5, 1_700_000_000)
    w = EventFileWriter(str(tmp_path / "logs" / "eval"))
    for step in range(50, 201, 50):
        value = summary_pb2.Summary.Value(tag="eval/accuracy", simple_value=0.4)
        w.add_event(event_pb2.Event(wall_time=1_700_000_000 + step, step=step,
                                    summary=summary_pb2.Summary(value=[value])))
    w.close()
    runs = load_runs(tmp_path / "logs")
    assert sorted((r.first_step, r.last_step, r.n_steps) for r in runs) == [
        (1, 200, 200), (50, 200, 4)]
    assert chains(["a", "b"], [Span(1, 200, 1, frozenset({"reward_mean", "entropy"})),
                               Span(50, 200, 50, frozenset({"heldout_score"}))]) == [[0], [1]]


def test_watching_a_console_log_a_resume_appends_to_reads_one_run(tmp_path: Path) -> None:
    """``watch console.log`` through a crash and the resume appended after it: the resumed
    launch is read at its global steps, one run with the first (as ``diagnose`` reads it)."""
    from grpo_doctor.watch import Watcher

    log = tmp_path / "console.log"
    log.write_text(_dicts(range(1, 121), 0.5) + _CRASH, encoding="utf-8")
    watcher = Watcher(log)
    watcher.poll()
    assert watcher.run is not None and watcher.run.last_step == 120
    then = time.time() - 120
    os.utime(log, (then, then))  # quiet after the traceback: the stop is called
    assert [a.event for a in watcher.poll() if a.mode == "run_stopped"] == ["alert"]
    with log.open("a", encoding="utf-8") as fh:
        fh.write(_dicts(range(101, 161), 0.8))
    cleared = [a for a in watcher.poll() if a.mode == "run_stopped"]
    assert [a.summary for a in cleared] == [
        "the run was launched again after the stop (resumed)"]
    run = watcher.run
    assert run is not None and (run.first_step, run.last_step, run.n_steps) == (1, 160, 160)
    assert run.frame.loc[130, "reward_mean"] == pytest.approx(0.8)


@pytest.mark.parametrize("between, said", [
    ("/var/spool/slurm/job1/slurm_script: line 12:  4242 Killed   python train.py\n",
     "launch 1 of 2 ended after 120 logged steps: the process was killed"),
    ("", None),
])
def test_a_launch_killed_with_no_traceback_then_resumed_is_joined(
        tmp_path: Path, between: str, said: str | None) -> None:
    """helper-76: the OOM killer (bash's "PID Killed cmd" line, or nothing at all) at step
    120, then a resume from checkpoint-100 appended: read as one run of 220 line-numbered
    steps. The epoch going back by more than a few intervals is a relaunch."""
    log = tmp_path / "console.log"
    log.write_text(_dicts(range(1, 121), 0.5) + between + _dicts(range(101, 201), 0.8),
                   encoding="utf-8")
    (run,) = load_runs(log)
    assert (run.first_step, run.last_step, run.n_steps) == (1, 200, 200)
    killed = [n for n in run.notes if "launch 1 of 2" in n]
    assert (said is None and not killed) or (killed and said in killed[0]), run.notes


def test_an_epoch_a_step_back_is_no_relaunch(tmp_path: Path) -> None:
    """One printed row a logging interval behind the one before it (two printers, a row
    printed late): one run, not a relaunch."""
    rows = _dicts(range(1, 101), 0.5).splitlines(keepends=True)
    rows[50], rows[51] = rows[51], rows[50]
    log = tmp_path / "console.log"
    log.write_text("".join(rows), encoding="utf-8")
    (run,) = load_runs(log)
    assert run.n_steps == 100


@pytest.mark.parametrize("exception", [
    "IndexError: list index out of range",
    "ValueError: reward is NaN in {'reward': nan, 'kl': 0.1}",
])
def test_a_traceback_showing_a_metric_dict_is_no_printed_row(tmp_path: Path,
                                                             exception: str) -> None:
    """helper-77: a traceback's source line ``return {'reward': ...}`` was taken for the last
    metric line (the crash unsaid), and a dict in its message for a 121st row, its reward
    NaN."""
    log = tmp_path / "console.log"
    log.write_text(_dicts(range(1, 121), 0.5) + 'Traceback (most recent call last):\n'
                   '  File "/home/me/train.py", line 9, in correctness_reward\n'
                   "    return {'reward': scores[i], 'answer': a}\n" + exception + "\n",
                   encoding="utf-8")
    (run,) = load_runs(log)
    assert run.last_step == 120 and run.ending is not None
    assert run.ending.error == exception


def test_watching_a_resumed_runs_event_folders_follows_one_run(tmp_path: Path) -> None:
    """helper-79: ``watch out/runs`` (or ``out``) of a run resumed into a second
    ``runs/<date>_<host>`` followed each launch as a run of its own, the second a half run
    with its own first action. One run, as diagnose reads it; a sweep's folders stay apart."""
    from grpo_doctor.watch import WatchAll

    runs = tmp_path / "out" / "runs"
    _scalars(runs / "Dec07_02-12-15_vm", range(1, 121), 0.5, 1_700_000_000)
    _scalars(runs / "Dec07_02-12-39_vm", range(101, 201), 0.7, 1_700_000_500)
    for path in (runs, tmp_path / "out"):
        watch = WatchAll(path)
        watch.poll(final=True)
        members = [w for w in watch.members() if w.run is not None]
        assert len(members) == 1, [w.path for w in watch.members()]
        run = members[0].run
        assert (run.first_step, run.last_step, run.n_steps) == (1, 200, 200)
        assert run.frame.loc[110, "reward_mean"] == pytest.approx(0.7)
    _scalars(tmp_path / "sweep" / "lr1", range(1, 101), 0.5, 1_700_000_000)
    _scalars(tmp_path / "sweep" / "lr2", range(1, 101), 0.6, 1_700_000_000)
    watch = WatchAll(tmp_path / "sweep")
    watch.poll(final=True)
    assert len([w for w in watch.members() if w.run is not None]) == 2


def test_a_launch_that_logged_nothing_does_not_keep_the_others_apart(tmp_path: Path) -> None:
    """helper-77: a relaunch that died at start-up (its event file empty) between a run and
    its resume had kept them apart ("holds 2 runs"), or failed the read ("the file is
    empty")."""
    runs = tmp_path / "out" / "runs"
    _scalars(runs / "Dec07_02-12-15_vm", range(1, 121), 0.5, 1_700_000_000)
    dead = runs / "Dec07_02-12-30_vm"
    dead.mkdir(parents=True)
    (dead / "events.out.tfevents.1700000300.vm.1.0").write_bytes(b"")
    _scalars(runs / "Dec07_02-12-39_vm", range(101, 201), 0.7, 1_700_000_500)
    (run,) = load_runs(runs)
    assert (run.first_step, run.last_step) == (1, 200)
    assert any(n.startswith("left out, logging nothing: Dec07_02-12-30_vm") for n in run.notes)
