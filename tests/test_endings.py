"""A run whose process stopped on an error after its last logged step (a traceback ends its
console output) is said to have stopped, with the error and where it was raised, and where to
resume; a user's Ctrl-C is a note; a traceback the run printed and went on from is nothing."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_doctor import api
from grpo_doctor.endings import Ending, ending_in
from grpo_doctor.reporters.json_report import render_json

EXAMPLES = Path(api.example_path("healthy")).parent

KEY_ERROR = """Traceback (most recent call last):
  File "/home/me/train_grpo.py", line 210, in <module>
    trainer.train()
  File "/opt/venv/lib/python3.11/site-packages/transformers/trainer.py", line 2325, in train
    return inner_training_loop(
           ^^^^^^^^^^^^^^^^^^^^
  File "/opt/venv/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1234, in _reward
    output_reward_func = reward_func(prompts=prompts, completions=completions, **reward_kwargs)
  File "/home/me/rewards.py", line 41, in correctness_reward
    key = row["answer"]
KeyError: 'answer'
"""


def _trl_console(rows: int | None = None) -> str:
    """The bundled healthy run printed as TRL's Trainer prints its logs, one dict a step."""
    frame = pd.read_csv(EXAMPLES / "healthy.csv")
    if rows is not None:
        frame = frame.head(rows)
    lines = []
    for _, row in frame.iterrows():
        logged = {key.removeprefix("train/"): float(value) for key, value in row.items()
                  if key != "train/global_step"}
        epoch = round(float(row["train/global_step"]) / 1000, 4)  # as the Trainer prints it
        lines.append(repr({"loss": 0.01, **logged, "epoch": epoch}))
    return "\n".join(lines) + "\n"


def _diagnose(tmp_path: Path, text: str) -> api.Result:
    path = tmp_path / "console.log"
    path.write_text(text)
    return api.diagnose_source(path)[0]


def test_a_traceback_after_the_last_step_is_the_root_cause(tmp_path: Path) -> None:
    healthy = _diagnose(tmp_path, _trl_console())
    assert healthy.diagnosis.status == "healthy"
    result = _diagnose(tmp_path, _trl_console() + KEY_ERROR)
    d = result.diagnosis
    assert d.status == "warning"
    assert d.root_cause is not None and d.root_cause.mode == "run_stopped"
    assert d.root_cause.step == result.run.last_step
    first = d.root_cause.first_action
    # The error and the user's own frame (not the library's), then where to resume.
    assert "KeyError: 'answer'" in first and "in correctness_reward, rewards.py line 41" in first
    assert first.index("KeyError") < first.index("resume")
    assert d.plan[0].action == first
    assert not any(c.fired for c in d.checks)  # the training itself stays judged sound
    doc = json.loads(render_json(d))
    assert doc["status"] == "warning" and doc["root_cause"]["mode"] == "run_stopped"


def test_resume_names_the_last_checkpoint_saved_before_the_stop(tmp_path: Path) -> None:
    """A run's folder: the console read for how it ended, the checkpoints for where to go on
    (TRL writes a trainer state into each)."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "console.log").write_text(_trl_console(130) + KEY_ERROR)
    frame = pd.read_csv(EXAMPLES / "healthy.csv")
    for step in (50, 100):
        history = [{"step": int(row["train/global_step"]), "loss": 0.01,
                    **{k.removeprefix("train/"): float(v) for k, v in row.items()
                       if k != "train/global_step"}}
                   for _, row in frame.head(step).iterrows()]
        (run_dir / f"checkpoint-{step}").mkdir()
        (run_dir / f"checkpoint-{step}" / "trainer_state.json").write_text(json.dumps(
            {"global_step": step, "max_steps": 200, "log_history": history}))
    first = api.diagnose_source(run_dir)[0].diagnosis.root_cause
    assert first is not None and first.mode == "run_stopped"
    assert first.first_action.endswith("then resume from checkpoint-100, the last it saved")


@pytest.mark.parametrize("saving, said", [
    ({"save_strategy": "no"}, "(save_strategy no), so its training is lost; save checkpoints "
                              "this time (save_strategy steps, save_steps a tenth of the run "
                              "or so)"),
    ({"save_strategy": "steps", "save_steps": 500},
     "(save_steps 500), so its training is lost; save more often this time (save_steps under "
     "150)"),
])
def test_a_run_that_saved_no_checkpoint_is_relaunched_not_resumed(
        tmp_path: Path, saving: dict, said: str) -> None:
    """Trial 61: save_strategy "no" and a ValueError at step 150: "then resume from the last
    checkpoint it saved", of a run that saved none."""
    from dataclasses import replace

    from grpo_doctor import diagnose

    run = _diagnose(tmp_path, _trl_console(150) + KEY_ERROR).run
    first = diagnose(replace(run, config={**run.config, **saving})).root_cause.first_action
    assert first.endswith(f"then relaunch from the start: no checkpoint was saved by step 150 "
                          f"{said}"), first


def test_a_traceback_the_run_went_on_from_is_no_ending(tmp_path: Path) -> None:
    text = _trl_console(100) + KEY_ERROR + _trl_console()[len(_trl_console(100)):]
    d = _diagnose(tmp_path, text).diagnosis
    assert d.root_cause is None or d.root_cause.mode != "run_stopped"
    assert not any("stopped" in n for n in d.notes)


def test_a_finished_run_has_no_ending(tmp_path: Path) -> None:
    summary = "{'train_runtime': 120.5, 'train_samples_per_second': 3.1, 'train_loss': 0.01}\n"
    d = _diagnose(tmp_path, _trl_console() + KEY_ERROR + summary).diagnosis
    assert d.status == "healthy"


def test_ctrl_c_is_a_note_not_a_cause(tmp_path: Path) -> None:
    interrupted = KEY_ERROR.replace("KeyError: 'answer'", "KeyboardInterrupt")
    d = _diagnose(tmp_path, _trl_console() + interrupted).diagnosis
    assert d.status == "healthy"
    assert any(n.startswith("the run was stopped by hand (KeyboardInterrupt)") for n in d.notes)


def test_a_stop_beside_a_finding_is_a_note(tmp_path: Path) -> None:
    frame = pd.read_csv(EXAMPLES / "grad-explosion.csv")
    lines = [repr({"loss": 0.01, **{k.removeprefix("train/"): float(v) for k, v in row.items()
                                    if k != "train/global_step"}}) for _, row in frame.iterrows()]
    text = "\n".join(lines) + "\n" + KEY_ERROR.replace("KeyError: 'answer'",
                                                       "ValueError: loss is nan")
    d = _diagnose(tmp_path, text).diagnosis
    assert d.root_cause is not None and d.root_cause.mode != "run_stopped"
    assert any("the run stopped on an error after step" in n and "ValueError: loss is nan" in n
               for n in d.notes)


def test_out_of_memory_asks_for_a_smaller_step(tmp_path: Path) -> None:
    oom = KEY_ERROR.replace("KeyError: 'answer'", "torch.OutOfMemoryError: CUDA out of memory. "
                            "Tried to allocate 2.00 GiB.")
    first = _diagnose(tmp_path, _trl_console() + oom).diagnosis.root_cause
    assert first is not None and first.first_action.startswith("make the step fit in memory")


def test_a_killed_process(tmp_path: Path) -> None:
    d = _diagnose(tmp_path, _trl_console() + "Killed\n").diagnosis
    assert d.root_cause is not None and "killed" in d.root_cause.first_action


def test_ray_workers_tracebacks_are_read_through_their_prefix() -> None:
    text = "\n".join(f"(TaskRunner pid=4242) {line}" for line in KEY_ERROR.splitlines())
    assert ending_in(text) == Ending("error", "KeyError: 'answer'",
                                     "in correctness_reward, rewards.py line 41")


def test_a_comprehension_is_named_by_the_function_it_is_in() -> None:
    comprehension = ('  File "/home/me/rewards.py", line 44, in <listcomp>\n'
                     '    return [1.0 if row["answer"] == a else 0.0 for a in answer]\n'
                     "KeyError: 'answer'")
    text = KEY_ERROR.replace("KeyError: 'answer'", comprehension)
    found = ending_in(text)
    assert found is not None and found.where == "in correctness_reward, rewards.py line 41"


def test_the_last_of_chained_exceptions_is_the_one_raised() -> None:
    chained = (KEY_ERROR + "\nDuring handling of the above exception, another exception "
               "occurred:\n\n" + KEY_ERROR.replace("KeyError: 'answer'",
                                                   "RuntimeError: reward failed"))
    found = ending_in(chained)
    assert found is not None and found.error == "RuntimeError: reward failed"


def test_a_tail_without_an_error_is_none() -> None:
    assert ending_in("100%|██████████| 200/200 [01:10<00:00]\nSaving model checkpoint\n") is None


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=400))
def test_any_text_reads_without_raising(text: str) -> None:
    found = ending_in(text)
    assert found is None or (found.kind in ("error", "killed", "interrupted") and found.error)
    if found is not None:
        assert len(found.error) <= 250


@pytest.mark.parametrize("message", ["x" * 5000])
def test_a_long_message_is_shortened(message: str) -> None:
    found = ending_in(KEY_ERROR.replace("'answer'", message))
    assert found is not None and len(found.error) < 200 and found.error.endswith("...")


def test_a_notebook_whose_training_cell_raised(tmp_path: Path) -> None:
    """The exception a training cell ended in (its ``error`` output beside the progress
    table), as a console's traceback."""
    nb = json.loads((Path(__file__).parent / "fixtures/notebook/grpo.ipynb").read_text())
    cell = [c for c in nb["cells"] if any("<table" in str(o.get("data", {}))
                                          for o in c.get("outputs", []))][-1]
    cell["outputs"].append({"output_type": "error", "ename": "OutOfMemoryError",
                            "evalue": "CUDA out of memory. Tried to allocate 1.50 GiB",
                            "traceback": ["\x1b[0;31mOutOfMemoryError\x1b[0m ..."]})
    path = tmp_path / "run.ipynb"
    path.write_text(json.dumps(nb))
    d = api.diagnose_source(path)[0].diagnosis
    # Beside this run's own finding (a NaN KL), said as a note.
    assert d.root_cause is not None and d.root_cause.mode == "numerical_failure"
    assert any("stopped on an error after step 12: OutOfMemoryError: CUDA out of memory" in n
               for n in d.notes)
    cell["outputs"][-1].update(ename="KeyboardInterrupt", evalue="")
    path.write_text(json.dumps(nb))
    d = api.diagnose_source(path)[0].diagnosis
    assert d.root_cause is None or d.root_cause.mode != "run_stopped"
    assert any("stopped by hand (KeyboardInterrupt)" in n for n in d.notes)


def test_an_audit_lists_a_stopped_run_and_fails_it_at_warning(tmp_path: Path) -> None:
    from grpo_doctor.audit import audit
    from grpo_doctor.config import Settings

    (tmp_path / "crashed.log").write_text(_trl_console() + KEY_ERROR)
    (tmp_path / "finished.log").write_text(_trl_console())
    result = audit([str(tmp_path)], Settings(fail_on="warning"), jobs=1)
    by_name = {r.name: r for r in result.runs}
    crashed = by_name["crashed"]
    assert [f["mode"] for f in crashed.findings] == ["run_stopped"]
    assert crashed.failing == ("run_stopped",)
    assert by_name["finished"].findings == [] and by_name["finished"].failing == ()
    assert result.exit_code() == 1


def test_watch_alerts_once_when_the_watched_run_stops_on_an_error(tmp_path: Path) -> None:
    from grpo_doctor.watch import Watcher

    path = tmp_path / "console.log"
    lines = _trl_console().splitlines(keepends=True)
    path.write_text("".join(lines[:60]))
    watcher = Watcher(path)
    before = watcher.poll()
    assert not any(a.mode == "run_stopped" for a in before)
    with path.open("a") as fh:
        fh.write("".join(lines[60:80]))
    assert not any(a.mode == "run_stopped" for a in watcher.poll())
    with path.open("a") as fh:
        fh.write(KEY_ERROR)
    # Held while the log may still grow (a caught exception printed mid-run goes on)...
    assert not any(a.mode == "run_stopped" for a in watcher.poll())
    _quiet(path)  # ... and called once the log stayed unchanged
    stopped = [a for a in watcher.poll() if a.mode == "run_stopped"]
    assert len(stopped) == 1 and stopped[0].step == 80
    assert stopped[0].first_action is not None and "KeyError: 'answer'" in stopped[0].first_action
    assert watcher.status == "warning"
    from grpo_doctor.reporters.live import status_line

    line = status_line(watcher)
    assert "the run stopped on an error. Do first: fix the error" in line
    with path.open("a") as fh:
        fh.write("\n")
    assert not any(a.mode == "run_stopped" for a in watcher.poll())  # said once


def _quiet(path: Path, seconds: float = 120.0) -> None:
    """``path`` as a log unchanged for ``seconds``."""
    import os
    import time

    then = time.time() - seconds
    os.utime(path, (then, then))


def test_watch_takes_a_caught_exceptions_traceback_for_no_stop(tmp_path: Path) -> None:
    """helper-76: a reward function's caught exception, its traceback printed, then more
    metric lines: watch alerted run_stopped at once, never took it back, and
    ``--exit-on warning`` ended the watch of a healthy run. Held until the log goes quiet;
    one alerted and then followed by metrics is cleared."""
    from grpo_doctor.watch import Watcher

    path = tmp_path / "console.log"
    lines = _trl_console().splitlines(keepends=True)
    path.write_text("".join(lines[:60]) + KEY_ERROR)
    watcher = Watcher(path)
    assert not any(a.mode == "run_stopped" for a in watcher.poll())
    assert watcher.status == "healthy"  # the panel does not say it either, while held
    with path.open("a") as fh:
        fh.write("".join(lines[60:80]))
    assert not any(a.mode == "run_stopped" for a in watcher.poll())
    assert watcher.status != "warning"
    # Quiet after a traceback: called; then the run goes on: cleared, said why.
    with path.open("a") as fh:
        fh.write(KEY_ERROR)
    watcher.poll()
    _quiet(path)
    assert [a.event for a in watcher.poll() if a.mode == "run_stopped"] == ["alert"]
    with path.open("a") as fh:
        fh.write("".join(lines[80:100]))
    cleared = [a for a in watcher.poll() if a.mode == "run_stopped"]
    assert [a.event for a in cleared] == ["cleared"]
    assert "an exception it caught, not a stop" in cleared[0].summary


def test_a_log_short_of_its_max_steps_says_so_when_it_says_nothing_of_how_it_ended() -> None:
    """Trial 58: the TensorBoard log of a run that crashed at step 120 of 200 read HEALTHY
    over steps 1-120, the traceback in a console log it was not read with."""
    from grpo_doctor import diagnose
    from grpo_doctor.importers import load_runs

    trial = Path(__file__).parent / "fixtures" / "trial"
    run = load_runs(trial / "trl_top_p_08_temp_07.csv")[0]
    config = {"max_steps": 200}
    said = "the log ends at step 120 of the 200 steps its config sets (max_steps), with no end"
    cut = replace(run.truncated(120), config=config)
    d = diagnose(cut)
    # First among the notes, and in the audit's line of a run with no finding (trial 60: a
    # run cut off at step 109 read "healthy" there, the note fourth of four in diagnose).
    assert d.notes[0].startswith(said) and not d.findings
    from grpo_doctor.audit_result import AuditedRun
    from grpo_doctor.reporters.audit_report import _root_lines
    from grpo_doctor.reporters.json_report import to_json_obj

    line = " ".join(_root_lines(AuditedRun("run", "run", to_json_obj(d)), 200))
    assert ("→ healthy · the log ends at step 120 of the 200 steps its config sets "
            "(max_steps): still going, or stopped?") in line
    assert not any("(max_steps)" in n for n in diagnose(replace(run, config=config)).notes)
    ended = replace(cut, ending=Ending("error", "KeyError: 'answer'"))
    assert not any(n.startswith(said) for n in diagnose(ended).notes)


def test_a_crash_then_a_resume_in_one_console_log_are_two_processes(tmp_path: Path) -> None:
    """Trial 59: a KeyError at step 120, then a resume from checkpoint-100 appended to the
    same console.log, had read as one run of 220 "steps" (log-line numbers), the resumed
    steps shifted by 20."""
    from grpo_doctor.importers import load_runs

    first, second = _trl_console(120), _trl_console(100)
    path = tmp_path / "console.log"
    path.write_text(first + KEY_ERROR + second)
    runs = load_runs(path)
    assert [r.n_steps for r in runs] == [120, 100]
    # The first process died on the error; the relaunch did not (helper-75: the first had
    # read HEALTHY, the crash said nowhere).
    assert runs[0].ending == Ending("error", "KeyError: 'answer'",
                                    "in correctness_reward, rewards.py line 41")
    assert runs[1].ending is None


def test_the_callbacks_own_values_are_not_read_back_as_metrics() -> None:
    """Trial 59: a run logged with the TRL callback attached read its doctor/* values back as
    a dozen metrics of the run."""
    from grpo_doctor.importers.in_memory import run_from_log_history

    history = [{"step": s, "loss": 0.1, "reward": s / 50, "doctor/kl_drift": 0.0,
                "doctor/alerts": 0.0} for s in range(1, 51)]
    run = run_from_log_history(history)
    assert not any(c.startswith("doctor/") for c in run.frame.columns)
    assert "doctor/alerts" not in run.unmapped


def test_a_reward_whose_weights_changed_mid_run_says_so() -> None:
    """Trial 59: resumed at step 101 with reward_weights [10, 0.5]: the reward jumped 1.3 ->
    9.6, its terms unchanged, and nothing said why."""
    from grpo_doctor.importers import load_runs
    from grpo_doctor.rules.signals import reweighted_note

    trial = Path(__file__).parent / "fixtures" / "trial"
    run = load_runs(trial / "trl_top_p_08_temp_07.csv")[0]
    assert reweighted_note(run) is None  # one set of weights throughout
    frame = run.frame.copy()
    c, f = frame["reward_component/correctness_reward"], frame["reward_component/format_reward"]
    frame["reward_mean"] = np.where(frame.index > 100, 10 * c + 0.5 * f, c + f)
    note = reweighted_note(replace(run, frame=frame, _finite={}, _derived={}))
    assert note is not None and note.startswith(
        "from step 101 the reward is 10 x correctness_reward + 0.5 x format_reward, where "
        "before it was 1 x correctness_reward + 1 x format_reward")


def test_a_ray_task_error_in_a_verl_log_is_read_through_its_colours() -> None:
    """verl's driver dies on a Ray task's error, printed under coloured worker prefixes: the
    wrapped exception names the cause (out of memory here)."""
    colour = "\x1b[2m\x1b[36m(main_task pid=4242)\x1b[0m "
    text = "\n".join([
        colour + "step:12 - actor/pg_loss:0.009 - critic/score/mean:0.650",
        colour + "Traceback (most recent call last):",
        colour + '  File "/opt/verl/verl/trainer/ppo/ray_trainer.py", line 900, in fit',
        colour + "    batch = self.actor_rollout_wg.generate_sequences(batch)",
        "Error executing job with overrides: []",
        "Traceback (most recent call last):",
        '  File "/opt/verl/verl/trainer/main_ppo.py", line 64, in main',
        "    run_ppo(config)",
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task() (pid=4242, "
        "ip=10.0.0.1)",
    ])
    found = ending_in(text)
    assert found is not None and found.error.startswith(
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task()")
    assert found.where == "in main, main_ppo.py line 64"


def test_a_folders_report_says_a_crash_its_console_shows_before_a_relaunch(tmp_path: Path
                                                                            ) -> None:
    """Trial 59: the folder's trainer state covers the crash and the resume as one run;
    the console beside it holds both launches, the first dying on a KeyError: said."""
    run_dir = tmp_path / "run"
    (run_dir / "checkpoint-200").mkdir(parents=True)
    (run_dir / "console.log").write_text(_trl_console(120) + KEY_ERROR + _trl_console(100))
    frame = pd.read_csv(EXAMPLES / "healthy.csv").head(200)
    history = [{"step": int(row["train/global_step"]), "loss": 0.01,
                **{k.removeprefix("train/"): float(v) for k, v in row.items()
                   if k != "train/global_step"}} for _, row in frame.iterrows()]
    (run_dir / "checkpoint-200" / "trainer_state.json").write_text(json.dumps(
        {"global_step": 200, "max_steps": 200, "log_history": history}))
    d = api.diagnose_source(run_dir)[0].diagnosis
    assert d.run.n_steps == 200 and d.status == "healthy"
    assert any(n.startswith("console.log: launch 1 of 2 stopped on an error after 120 logged "
                            "steps (KeyError: 'answer'") for n in d.notes), d.notes


_WORKER = ('Traceback (most recent call last):\n'
           '  File "/home/me/train.py", line 41, in correctness_reward\n'
           '    gold = answer["answer"]\n'
           "KeyError: 'answer'\n")


@pytest.mark.parametrize("after, said", [
    ('E1207 04:30:01 api.py:869] failed (exitcode: 1) local_rank: 1\n'
     'Traceback (most recent call last):\n'
     '  File "/usr/local/bin/torchrun", line 8, in <module>\n'
     '  File "/usr/lib/python3/dist-packages/torch/distributed/launcher/api.py", line 263, '
     'in launch_agent\n'
     '    raise ChildFailedError(\n'
     'torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n',
     "KeyError: 'answer' (raised in correctness_reward, train.py line 41)"),
    ('Traceback (most recent call last):\n'
     '  File "/usr/lib/python3/dist-packages/accelerate/commands/launch.py", line 763, in '
     'simple_launcher\n'
     "subprocess.CalledProcessError: Command '['python', 'train.py']' returned non-zero exit "
     "status 1.\n",
     "KeyError: 'answer' (raised in correctness_reward, train.py line 41)"),
])
def test_a_launchers_own_traceback_is_not_the_error_to_fix(after: str, said: str) -> None:
    """helper-76: under torchrun or accelerate launch the last traceback is the launcher's,
    raised in library code; the worker's error above it is what to fix."""
    ending = ending_in(_WORKER + after)
    assert ending is not None and ending.words() == said
    # Another rank's broken collective after a rank's own error is its echo too.
    echo = ("[rank0]: Traceback (most recent call last):\n"
            '[rank0]:   File "/home/me/train.py", line 50, in step\n'
            "[rank0]: torch.distributed.DistBackendError: NCCL error: remote process exited\n")
    assert ending_in(_WORKER + echo).error == "KeyError: 'answer'"
    # Alone, the launcher's is what there is.
    alone = ending_in(after)
    assert alone is not None and ("ChildFailedError" in alone.error
                                  or "CalledProcessError" in alone.error)


@pytest.mark.parametrize("label", ["0: ", "[default0]:", "worker-0: ", "[1,0]<stderr>:"])
def test_a_launchers_label_on_every_line_is_taken_off_the_traceback(label: str) -> None:
    """helper-77: under srun --label, torchrun --tee, pdsh or OpenMPI every line carries a
    label; the crash had been unsaid (HEALTHY)."""
    text = "".join(label + line + "\n" for line in _WORKER.splitlines())
    ending = ending_in(text)
    assert ending is not None and ending.words() == (
        "KeyError: 'answer' (raised in correctness_reward, train.py line 41)")


@pytest.mark.parametrize("line, kind, said", [
    ("slurmstepd: error: *** JOB 123 ON node1 CANCELLED AT 2026-12-07T04:00:00 DUE TO TIME "
     "LIMIT ***", "killed", "time limit"),
    ("[WARNING] Signal 9 (SIGKILL) received by PID 1234", "killed", "SIGKILL"),
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "error", "CUDA"),
])
def test_endings_that_are_no_traceback(line: str, kind: str, said: str) -> None:
    """helper-77: Slurm's time limit, torchrun's SIGKILL, a bare CUDA error."""
    ending = ending_in("some output\n" + line + "\n")
    assert ending is not None and ending.kind == kind and said in ending.error


def test_a_time_limit_asks_for_more_time(tmp_path: Path) -> None:
    cut = ("slurmstepd: error: *** JOB 1 ON n1 CANCELLED AT 2026-12-07T04:00:00 DUE TO TIME "
           "LIMIT ***\n")
    first = _diagnose(tmp_path, _trl_console(150) + cut).diagnosis.root_cause.first_action
    assert first.startswith("give the job more time (or save checkpoints more often)"), first


@pytest.mark.parametrize("last, error", [
    ("triton.runtime.errors.OutOfResources: out of resource: shared memory",
     "triton.runtime.errors.OutOfResources: out of resource: shared memory"),
    ("pyarrow.lib.ArrowInvalid: Column 2 named answer expected length 32",
     "pyarrow.lib.ArrowInvalid: Column 2 named answer expected length 32"),
    ("StopIteration", "StopIteration"),
])
def test_any_exception_name_closes_a_traceback(last: str, error: str) -> None:
    """helper-77: exceptions whose names end in no Error/Exception (Triton's OutOfResources
    on a small GPU, pyarrow's ArrowInvalid, StopIteration) had left the crash unsaid."""
    ending = ending_in('Traceback (most recent call last):\n'
                       '  File "/home/me/train.py", line 7, in step\n'
                       "    out = kernel(x)\n" + last + "\n")
    assert ending is not None and ending.error == error


def test_a_preempted_job_has_nothing_to_fix(tmp_path: Path) -> None:
    cut = ("slurmstepd: error: *** JOB 1 ON n1 CANCELLED AT 2026-12-07T04:00:00 DUE TO "
           "PREEMPTION ***\n")
    first = _diagnose(tmp_path, _trl_console(150) + cut).diagnosis.root_cause.first_action
    assert first.startswith("nothing to fix in the run: the scheduler stopped it; then"), first
    assert ending_in("E1207 api.py:869] failed (exitcode: -9) local_rank: 0\n").kind == "killed"


def test_a_notebook_whose_cell_printed_dicts_then_raised(tmp_path: Path) -> None:
    """helper-77: a notebook with no progress table, its training cell printing dict lines
    and ending in an error output, read HEALTHY."""
    from grpo_doctor.importers import load_runs

    rows = _trl_console(80)
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{
        "cell_type": "code", "source": "trainer.train()", "metadata": {}, "execution_count": 1,
        "outputs": [{"output_type": "stream", "name": "stdout", "text": rows},
                    {"output_type": "error", "ename": "KeyError", "evalue": "'answer'",
                     "traceback": ["KeyError: 'answer'"]}]}]}
    path = tmp_path / "train.ipynb"
    path.write_text(json.dumps(nb))
    (run,) = load_runs(path)
    assert run.ending is not None and "KeyError" in run.ending.error


def test_a_traceback_thousands_of_lines_long_is_read(tmp_path: Path) -> None:
    """helper-77: a RecursionError's 3,000+ frames, or warnings after a traceback, had been
    cut at 3,000 lines and the crash unsaid."""
    frames = "".join('  File "/home/me/parse.py", line 12, in walk\n    return walk(x[1:])\n'
                     for _ in range(2000))
    text = (_trl_console(80) + "Traceback (most recent call last):\n" + frames
            + "RecursionError: maximum recursion depth exceeded\n"
            + "".join(f"UserWarning: shutting down {k}\n" for k in range(3000)))
    d = _diagnose(tmp_path, text).diagnosis
    assert d.root_cause is not None and d.root_cause.mode == "run_stopped"
    assert "RecursionError" in d.root_cause.first_action


def test_an_error_after_training_finished_is_a_note(tmp_path: Path) -> None:
    """helper-77: the closing summary, then saving the model failed (no space left): HEALTHY,
    not a word. The training is sound; the final save may be missing."""
    summary = ("{'train_runtime': '88.1', 'train_samples_per_second': '36', "
               "'train_steps_per_second': '1.1', 'train_loss': '0.01', 'epoch': '0.1'}\n")
    crash = ('Traceback (most recent call last):\n'
             '  File "/home/me/train.py", line 99, in <module>\n'
             '    trainer.save_model()\n'
             "OSError: [Errno 28] No space left on device\n")
    d = _diagnose(tmp_path, _trl_console(100) + summary + crash).diagnosis
    assert d.status == "healthy"
    assert any(n.startswith("training finished, then the process stopped on an error: "
                            "OSError: [Errno 28] No space left on device") for n in d.notes)


def test_a_verl_crash_then_its_resume_says_the_error(tmp_path: Path) -> None:
    """helper-77: verl steps 1-60, a Ray task's KeyError, then the resume from step 41: only
    "the step went backwards" was said, the error unsaid."""
    rows = lambda a, b: "".join(  # noqa: E731
        f"step:{s} - actor/entropy:0.5 - critic/score/mean:{0.2 + s / 200:.3f} - "
        f"actor/grad_norm:0.4\n" for s in range(a, b))
    text = (rows(1, 61) + 'Traceback (most recent call last):\n'
            '  File "/home/me/reward.py", line 12, in compute_score\n'
            "KeyError: 'ground_truth'\n" + rows(41, 121))
    d = _diagnose(tmp_path, text).diagnosis
    assert any(n.startswith("a process stopped on an error before the steps went back") and
               "KeyError: 'ground_truth'" in n for n in d.notes), d.notes
