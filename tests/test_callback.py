"""``DoctorCallback`` in a real ``transformers.Trainer`` loop on CPU: a one-weight model whose
trainer logs a simulated entropy collapse next to its loss. Skipped when transformers or torch
is not installed (a torch build, then the ``trl`` extra: docs/watch.md)."""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_doctor import diagnose, load_run


def test_a_clear_import_error_without_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    """It says how to get a CPU torch (the extra leaves torch to the user, and accelerate would
    pull PyPI's CUDA build) and how to install the extra from a clone or a git URL, never from
    a package index grpo-doctor is not on; the README gives the same three commands."""
    monkeypatch.setitem(sys.modules, "transformers", None)
    monkeypatch.delitem(sys.modules, "grpo_doctor.integrations.trl", raising=False)
    with pytest.raises(ImportError) as raised:
        importlib.import_module("grpo_doctor.integrations.trl")
    message = str(raised.value)
    commands = ["pip install torch --index-url https://download.pytorch.org/whl/cpu",
                'pip install -e ".[trl]"',
                'pip install "grpo-doctor[trl] @ git+https://github.com/OWNER/grpo-doctor.git"']
    assert all(f"    {command}\n" in message for command in commands), message
    assert "needs transformers" in message and "no package-index name" in message
    assert "'grpo-doctor[trl]'" not in message and "CUDA" in message
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert all(command in readme for command in commands)
    import grpo_doctor.integrations  # the package itself never needs transformers

    assert grpo_doctor.integrations.__doc__


#: The [trl] extra and a torch build (.ci/run installs them), found without importing them:
#: importing torch takes seconds, paid only where a test uses it (the slow tests).
HAVE_TRAINER = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))
if not HAVE_TRAINER and os.environ.get("GRPO_DOCTOR_REQUIRE_TRAINER") == "1":
    # CI promised them: a missing one fails the run instead of skipping.
    raise ImportError("GRPO_DOCTOR_REQUIRE_TRAINER=1 but transformers or torch is missing")

needs_trainer = pytest.mark.skipif(
    not HAVE_TRAINER,
    reason="needs transformers and torch (pip install '.[trl]' and a torch build)")
COLLAPSE_FROM = 30


def simulated(step: int) -> dict[str, float]:
    """GRPO-like metrics: entropy collapses from step 30 while the reward stalls."""
    rng = np.random.default_rng(step)
    entropy = 0.9 * math.exp(-max(0, step - COLLAPSE_FROM) / 6) + 0.005 + abs(rng.normal(0, .01))
    return {"entropy": entropy, "reward": 0.5 + rng.normal(0, 0.01),
            "reward_std": 0.2 + rng.normal(0, 0.005), "kl": 0.01 + 0.001 * step}


def recorder() -> Any:
    """A callback that keeps a copy of every log it is given (as a reporter would send it)."""
    import transformers

    class Recorder(transformers.TrainerCallback):
        def __init__(self) -> None:
            self.logs: list[dict[str, Any]] = []

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None,
                   **kw: Any) -> None:
            self.logs.append({**(logs or {}), "_step": state.global_step})

    return Recorder()


def trainer(tmp_path: Path, callbacks: list[Any], max_steps: int = 150) -> Any:
    """A one-weight model on CPU whose trainer logs the simulated metrics, as TRL's does."""
    import torch
    import transformers

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(1, 1)

        def forward(self, x: Any, labels: Any = None) -> dict[str, Any]:
            return {"loss": ((self.lin(x) - labels) ** 2).mean()}

    class SimulatedGRPOTrainer(transformers.Trainer):
        def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
            if "loss" in logs:
                logs.update(simulated(self.state.global_step))
            super().log(logs, start_time)

    data = [{"x": torch.tensor([float(i % 4)]), "labels": torch.tensor([2.0 * (i % 4)])}
            for i in range(32)]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=max_steps, logging_steps=1,
        per_device_train_batch_size=4, learning_rate=1e-3, report_to="none",
        save_strategy="no", disable_tqdm=True, use_cpu=True, seed=0,
    )
    return SimulatedGRPOTrainer(model=Tiny(), args=args, train_dataset=data, callbacks=callbacks)


def train(tmp_path: Path, callbacks: list[Any], max_steps: int = 150) -> Any:
    t = trainer(tmp_path, callbacks, max_steps)
    t.train()
    return t


def offline(trained: Any, tmp_path: Path) -> Any:
    """``grpo-doctor diagnose`` on the trainer_state.json of the same history."""
    path = tmp_path / "trainer_state.json"
    trained.state.save_to_json(str(path))
    return diagnose(load_run(path))


@pytest.mark.slow  # trains with the real Trainer
@needs_trainer
def test_stops_training_on_critical_at_the_offline_first_alert(tmp_path: Path,
                                                               capsys: Any) -> None:
    from grpo_doctor.integrations.trl import DoctorCallback

    doctor = DoctorCallback(every_n_steps=1, stop_on="critical")
    rec = recorder()
    trained = train(tmp_path, [doctor, rec])

    crit = [a for a in doctor.alerts if a.severity.value == "critical"]
    assert crit and crit[0].mode == "entropy_collapse"
    assert doctor.stopped_at == crit[0].step == trained.state.global_step < 150
    assert COLLAPSE_FROM < doctor.stopped_at < COLLAPSE_FROM + 40

    # Same history, same rules, same replay: diagnose reports the alert's first-alert step.
    check = offline(trained, tmp_path).check("entropy_collapse")
    assert check.status.value == "critical"
    assert check.first_alert_step == crit[0].first_alert_step
    first = next(a for a in doctor.alerts if a.mode == "entropy_collapse")
    assert first.first_alert_step == first.step  # checked every step: alerted when raised

    # What it logged: the alert count on every log, severities of the modes it could check
    # (entropy_collapse once there are enough points to judge a trend).
    checked = [log for log in rec.logs if "doctor/alerts" in log]
    assert len(checked) == len([log for log in rec.logs if "loss" in log])
    assert "doctor/entropy_collapse" not in checked[0]
    last = checked[-1]
    assert last["doctor/entropy_collapse"] == 2.0
    assert last["doctor/alerts"] == float(len(doctor.alerts))
    assert "doctor/tool_spam" not in last  # not logged: skipped, so not reported
    early = next(log for log in checked if log["_step"] == 10)
    assert early["doctor/entropy_collapse"] == 0.0
    assert trained.state.log_history[-2]["doctor/entropy_collapse"] == 2.0
    err = capsys.readouterr().err
    assert "grpo-doctor: CRITICAL entropy_collapse" in err
    # What to do first is printed with the alert, weighing the trainer's own arguments
    # (learning_rate 1e-3, 200x the recipe's ceiling): trial 42 found it only in a
    # diagnosis nobody printed.
    assert crit[0].first_action is not None and "learning_rate 0.001 -> " in crit[0].first_action
    assert ". Do first: " in err


@pytest.mark.slow  # trains with the real Trainer
@needs_trainer
def test_checks_every_n_steps_and_can_only_report(tmp_path: Path) -> None:
    from grpo_doctor.integrations.trl import DoctorCallback

    doctor = DoctorCallback(every_n_steps=5, stop_on=None, print_alerts=False)
    rec = recorder()
    trained = train(tmp_path, [doctor, rec], max_steps=80)
    assert trained.state.global_step == 80 and doctor.stopped_at is None
    checked_steps = [log["_step"] for log in rec.logs if "doctor/alerts" in log]
    assert checked_steps == list(range(5, 81, 5))
    # Alerts carry the replayed first-alert step, which can fall between two checks.
    report = offline(trained, tmp_path)
    ent = report.check("entropy_collapse")
    alerts = [a for a in doctor.alerts if a.mode == "entropy_collapse"]
    assert alerts and alerts[0].step % 5 == 0
    assert alerts[0].first_alert_step <= alerts[0].step
    assert alerts[-1].severity == ent.status
    assert alerts[0].first_alert_step == ent.first_alert_step


@pytest.mark.slow  # trains with the real Trainer
@needs_trainer
def test_attach_puts_it_ahead_of_the_reporters(tmp_path: Path) -> None:
    from grpo_doctor.integrations.trl import DoctorCallback

    reporter = recorder()  # stands for W&B / TensorBoard, which the Trainer puts first
    t = trainer(tmp_path, [reporter], max_steps=12)
    doctor = DoctorCallback(every_n_steps=1, print_alerts=False).attach(t)
    assert t.callback_handler.callbacks[0] is doctor
    t.train()
    assert all("doctor/alerts" in log for log in reporter.logs if "loss" in log)


@pytest.mark.slow  # imports transformers (and torch through it: seconds)
@needs_trainer
def test_bad_arguments() -> None:
    from grpo_doctor.integrations.trl import DoctorCallback

    with pytest.raises(ValueError):
        DoctorCallback(every_n_steps=0)
    with pytest.raises(ValueError):
        DoctorCallback(stop_on="sometimes")


# --- hostile logs and states: no hook lets an exception reach the Trainer ---------------------
# These drive the hooks directly (transformers is needed, torch is not).


def _hooks_state(step: Any = 0, history: Any = None) -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(global_step=step, log_history=[] if history is None else history,
                           is_world_process_zero=True)


def _drive(doctor: Any, logs_by_step: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    transformers = pytest.importorskip("transformers")
    args = transformers.TrainingArguments(output_dir="out", report_to=[])
    control = transformers.TrainerControl()
    state = transformers.TrainerState()
    doctor.on_train_begin(args, state, control)
    sent = []
    for step, logs in logs_by_step.items():
        state.global_step = step
        logs = dict(logs)
        state.log_history.append({**logs, "step": step})
        doctor.on_log(args, state, control, logs=logs)
        sent.append(logs)
    doctor.on_train_end(args, state, control)
    return sent


@pytest.mark.slow  # imports transformers (and torch through it: seconds)
def test_a_mapped_eval_metric_not_logged_yet_is_not_an_error() -> None:
    pytest.importorskip("transformers")
    import warnings

    from grpo_doctor.config import Settings
    from grpo_doctor.integrations.trl import DoctorCallback

    doctor = DoctorCallback(settings=Settings(column_map={"heldout_score": "eval_accuracy"}),
                            print_alerts=False)
    logs = {}
    for step in range(1, 121):
        logs[step] = simulated(step)
        if step % 50 == 0:
            logs[step]["eval_accuracy"] = 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not even a warning: nothing went wrong
        sent = _drive(doctor, logs)
    assert doctor.errors == 0 and "doctor/errors" not in sent[-1]
    assert "doctor/alerts" in sent[9]  # checked at step 10, before eval_accuracy was logged
    run = doctor.run()
    assert run is not None and run.mapping.get("heldout_score") == "eval_accuracy"


@pytest.mark.slow  # imports transformers (and torch through it: seconds)
def test_a_resumed_history_with_odd_steps_is_read_without_them() -> None:
    transformers = pytest.importorskip("transformers")
    from grpo_doctor.integrations.trl import DoctorCallback

    doctor = DoctorCallback(print_alerts=False)
    history = [{"step": "ten", "loss": 1.0}, {"step": float("nan")}, 5, {"step": 1e300},
               {"step": True}, {"loss": 2.0}, {"step": 3, "loss": 1.0},
               {"step": 4.0, "loss": 1.0}]
    args = transformers.TrainingArguments(output_dir="out", report_to=[])
    doctor.on_train_begin(args, _hooks_state(4, history), transformers.TrainerControl())
    assert doctor.errors == 0
    assert [e["step"] for e in doctor.history] == [3, 4]


_ODD = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5),
                 st.binary(max_size=5), st.lists(st.integers(), max_size=3),
                 st.builds(object))
_LOGS = st.one_of(_ODD, st.dictionaries(st.one_of(st.text(max_size=12), st.integers()),
                                        _ODD, max_size=6))


@pytest.mark.slow  # imports transformers (and torch through it: seconds)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(st.tuples(st.integers(0, 40), _ODD, _LOGS, st.lists(_LOGS, max_size=3)),
                      min_size=1, max_size=12))
def test_no_hook_lets_an_exception_reach_the_trainer(calls: list[Any]) -> None:
    transformers = pytest.importorskip("transformers")
    import warnings

    from grpo_doctor.integrations.trl import DoctorCallback

    doctor = DoctorCallback(every_n_steps=1, print_alerts=False)
    hooks = sorted(name for name in dir(doctor) if name.startswith("on_"))
    args = transformers.TrainingArguments(output_dir="out", report_to=[])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for good_step, odd_step, logs, history in calls:
            for step in (good_step, odd_step):
                state = _hooks_state(step, history)
                for hook in hooks:
                    getattr(doctor, hook)(args, state, transformers.TrainerControl(),
                                          logs=logs, metrics=logs)
                if isinstance(logs, dict):
                    logs = {"entropy": 0.5, "reward": 0.5, **logs}
                doctor.on_log(args, state, transformers.TrainerControl(), logs=logs)
                doctor.on_log(None, None, None)  # not even a state


@pytest.mark.slow  # imports transformers (and torch through it: seconds)
def test_a_problem_is_warned_about_once_and_counted() -> None:
    transformers = pytest.importorskip("transformers")
    from grpo_doctor.integrations.trl import DoctorCallback

    doctor = DoctorCallback(every_n_steps=1, print_alerts=False)
    args = transformers.TrainingArguments(output_dir="out", report_to=[])
    control = transformers.TrainerControl()
    with pytest.warns(RuntimeWarning, match=r"DoctorCallback\.on_log failed .* training goes on"
                      ) as caught:
        for _ in range(3):
            doctor.on_log(args, _hooks_state("x"), control, logs={"loss": 1.0})
    assert len(caught) == 1 and doctor.errors == 3
    logs = {"loss": 1.0, "entropy": 0.5}
    doctor.on_log(args, _hooks_state(1), control, logs=logs)
    assert logs["doctor/errors"] == 3.0 and not control.should_training_stop


@pytest.mark.slow  # imports transformers (and torch through it: seconds)
def test_the_trainers_own_arguments_are_the_runs_settings() -> None:
    """A learning rate of 1e-9 in the TrainingArguments (GRPOConfig) and a policy that never
    left its reference for 120 steps: live, the callback's run had none of the trainer's
    settings, and the advice could not name the lr the user set."""
    pytest.importorskip("transformers")
    import transformers

    from grpo_doctor import diagnose
    from grpo_doctor.integrations.trl import DoctorCallback

    doctor = DoctorCallback(every_n_steps=1000, print_alerts=False)
    args = transformers.TrainingArguments(output_dir="out", report_to=[], learning_rate=1e-9)
    control = transformers.TrainerControl()
    state = transformers.TrainerState()
    doctor.on_train_begin(args, state, control)
    for step in range(1, 121):
        state.global_step = step
        logs = {"reward": 0.5 + 0.02 * math.sin(step * 2.1), "kl": 2e-6 * (1 + step % 3),
                "frac_reward_zero_std": 0.1, "learning_rate": 1e-9}
        state.log_history.append({**logs, "step": step})
        doctor.on_log(args, state, control, logs=dict(logs))
    run = doctor.run()
    assert run is not None and run.config["learning_rate"] == 1e-9
    assert "output_dir" in run.config and "deepspeed" not in run.config
    first = diagnose(run).root_cause.first_action
    assert "learning_rate 1e-9 -> 1e-6" in first, first


@pytest.mark.slow  # imports transformers (and torch through it: seconds)
def test_it_says_it_is_there_and_that_nothing_was_raised(capsys: Any) -> None:
    """Trial 45: a report-only callback on a healthy run printed nothing at all, and a user
    could not tell a quiet run from a callback that never ran."""
    pytest.importorskip("transformers")
    import transformers

    from grpo_doctor.integrations.trl import DoctorCallback

    doctor = DoctorCallback(every_n_steps=5, stop_on=None)
    args = transformers.TrainingArguments(output_dir="out", report_to=[])
    control, state = transformers.TrainerControl(), transformers.TrainerState()
    doctor.on_train_begin(args, state, control)
    for step in range(1, 31):
        state.global_step = step
        doctor.on_log(args, state, control,
                      logs={"loss": 0.1, "reward": 0.5 + 0.001 * step, "entropy": 0.5})
    # The Trainer's closing summary, logged at the last step again (trial 48 read "201").
    doctor.on_log(args, state, control, logs={"train_runtime": 12.0, "train_loss": 0.1})
    doctor.on_train_end(args, state, control)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "grpo-doctor: checking this run every 5 steps; an alert prints here", err
    assert err[-1] == "grpo-doctor: no alert over 30 logged steps (to step 30)", err
    _drive(DoctorCallback(print_alerts=False), {1: {"loss": 0.1}})
    assert capsys.readouterr().err == ""


@pytest.mark.slow  # imports transformers (and torch through it: seconds)
def test_a_check_does_not_make_the_trainers_warnings_print_again() -> None:
    """pandas sets and restores warning filters inside ordinary calls; each change made Python
    forget the warnings it had shown, so a trainer's deprecation warnings printed again at
    every check (trial 58). Shown once, they stay shown; the filters come back as they were."""
    pytest.importorskip("transformers")
    import warnings

    from grpo_doctor.integrations.trl import DoctorCallback

    def deprecated() -> None:
        warnings.warn("an old argument", FutureWarning, stacklevel=1)

    doctor = DoctorCallback(print_alerts=False)
    doctor.history = [{**simulated(step), "step": step} for step in range(1, 61)]
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("default")
        before = list(warnings.filters)
        deprecated()
        doctor.check()
        deprecated()
        doctor.check()
        deprecated()
        assert list(warnings.filters) == before
    assert len([w for w in shown if w.category is FutureWarning]) == 1
    assert doctor.monitor.run is not None  # the checks ran
