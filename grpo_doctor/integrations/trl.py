"""grpo-doctor inside a Hugging Face / TRL trainer: ``DoctorCallback``.

    from grpo_doctor.integrations.trl import DoctorCallback

    trainer = GRPOTrainer(model=..., args=..., callbacks=[DoctorCallback()])
    DoctorCallback().attach(trainer)    # or this, so that W&B and TensorBoard see doctor/* too

The callback keeps the history the trainer logs (``on_log``) and, every ``every_n_steps``
steps, checks it with the same rules and first-alert replay as ``grpo-doctor diagnose`` on the
run's ``trainer_state.json`` (the history is read as that importer reads ``log_history``). It
adds to the logs it checked ``doctor/<mode>`` (0 ok, 1 warning, 2 critical; modes whose metrics
are not logged are left out) and ``doctor/alerts`` (alerts raised so far), prints one line per
new or escalated finding, and stops training (``control.should_training_stop``) when a finding
reaches ``stop_on``.

The Trainer puts its reporting callbacks (W&B, TensorBoard, ...) before those passed with
``callbacks=[...]``, so they have already sent a log when this callback adds its values to it;
``attach(trainer)`` puts the callback first so that they send them too. Either way the values
also go into ``state.log_history`` (and so ``trainer_state.json``) and to every callback after
this one, the console printer included.

Needs ``transformers`` (``pip install 'grpo-doctor[trl]'``); importing this module without it
raises an ImportError that says so.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    from transformers import TrainerCallback
except ImportError as exc:  # pragma: no cover - exercised with transformers hidden
    raise ImportError(
        "grpo_doctor.integrations.trl needs transformers: pip install 'grpo-doctor[trl]' "
        "(or pip install transformers)"
    ) from exc

from grpo_doctor.config import Settings
from grpo_doctor.findings import check_rank
from grpo_doctor.monitor import Alert, Monitor
from grpo_doctor.store import Run

if TYPE_CHECKING:
    from transformers import TrainerControl, TrainerState, TrainingArguments

#: Prefix of the values the callback logs; never read back as metrics.
PREFIX = "doctor/"


class DoctorCallback(TrainerCallback):
    """Checks the logged history every ``every_n_steps`` steps; see the module docstring.

    ``stop_on``: "critical" (default), "warning", or None / "never" to only report.
    ``settings``: thresholds, mapping and selected modes, as ``grpo_doctor.config.Settings``
    (from ``grpo_doctor.config.load_settings()`` to use the project's config file).
    """

    def __init__(self, every_n_steps: int = 10, stop_on: str | None = "critical",
                 settings: Settings | None = None, *, print_alerts: bool = True) -> None:
        if every_n_steps < 1:
            raise ValueError(f"every_n_steps must be at least 1, got {every_n_steps}")
        if stop_on not in ("critical", "warning", "never", None):
            raise ValueError(f"stop_on must be critical, warning or None, got {stop_on!r}")
        self.every_n_steps = int(every_n_steps)
        self.stop_on = stop_on
        self.settings = settings or Settings()
        self.print_alerts = print_alerts
        self.column_map = self.settings.checked_map()
        self.monitor = Monitor(self.settings)
        self.history: list[dict[str, Any]] = []
        self.stopped_at: int | None = None  # the step at which it stopped training
        self._checked_at = 0  # global step of the last check
        self._name = "trainer"
        self._config: dict[str, Any] = {}

    # -- what it found -----------------------------------------------------------------------

    @property
    def alerts(self) -> list[Alert]:
        return self.monitor.alerts

    def run(self) -> Run | None:
        """The logged history as a Run, read as ``trainer_state.json``'s ``log_history`` is."""
        from grpo_doctor.importers._records import records_frame
        from grpo_doctor.importers.trainer_state import _history_records
        from grpo_doctor.store import build_run

        records, summary, _skipped = _history_records(self.history)
        if not records:
            return None
        frame, explicit = records_frame(records)
        return build_run(
            frame, name=self._name, source="<trainer>", format="trainer-state",
            step_column="step", column_map=self.column_map, explicit_nan=explicit,
            config=self._config, summary=summary,
        )

    def check(self) -> list[Alert]:
        """Check the history now; the new alerts."""
        run = self.run()
        return self.monitor.evaluate(run) if run is not None and run.n_steps else []

    def values(self) -> dict[str, float]:
        """The ``doctor/*`` values of the last check."""
        out = {f"{PREFIX}{mode}": float(rank) for mode, rank in self.monitor.severities().items()}
        out[f"{PREFIX}alerts"] = float(len(self.monitor.alerts))
        return out

    def attach(self, trainer: Any) -> DoctorCallback:
        """Add this callback to ``trainer`` ahead of its reporting callbacks."""
        callbacks = trainer.callback_handler.callbacks
        if self in callbacks:
            callbacks.remove(self)
        callbacks.insert(0, self)
        return self

    # -- trainer events ----------------------------------------------------------------------

    def _entry(self, logs: dict[str, Any], step: int) -> dict[str, Any]:
        entry = {k: v for k, v in logs.items() if not str(k).startswith(PREFIX)}
        entry["step"] = step
        return entry

    def on_train_begin(self, args: TrainingArguments, state: TrainerState,
                       control: TrainerControl, **kwargs: Any) -> None:
        from grpo_doctor.importers.trainer_state import _config

        self._name = args.run_name or Path(args.output_dir or "trainer").name or "trainer"
        self._config = _config(vars(state))
        # A resumed run starts from its checkpoint's history.
        self.history = [self._entry(e, int(e["step"])) for e in state.log_history
                        if isinstance(e, dict) and "step" in e]
        self._checked_at = state.global_step // self.every_n_steps * self.every_n_steps

    def on_log(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
               logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if logs is None:
            return
        step = state.global_step
        self.history.append(self._entry(logs, step))
        if step // self.every_n_steps <= self._checked_at // self.every_n_steps:
            return
        self._checked_at = step
        new = self.check()
        values = self.values()
        logs.update(values)
        if state.log_history and state.log_history[-1].get("step") == step:
            state.log_history[-1].update(values)
        self._report(new, state)
        rank = None if self.stop_on in (None, "never") else check_rank(self.stop_on)
        if rank is not None and any(a.severity.rank >= rank for a in new):
            control.should_training_stop = True
            self.stopped_at = step

    def on_train_end(self, args: TrainingArguments, state: TrainerState,
                     control: TrainerControl, **kwargs: Any) -> None:
        if self.history and self._checked_at < state.global_step:
            self._checked_at = state.global_step
            self._report(self.check(), state)

    def _report(self, alerts: list[Alert], state: TrainerState) -> None:
        if not (self.print_alerts and state.is_world_process_zero):
            return
        for alert in alerts:
            print(f"grpo-doctor: {alert.line()}", file=sys.stderr, flush=True)
