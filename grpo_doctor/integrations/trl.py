"""grpo-doctor inside a Hugging Face / TRL trainer: ``DoctorCallback``.

    from grpo_doctor.integrations.trl import DoctorCallback

    trainer = GRPOTrainer(model=..., args=..., callbacks=[DoctorCallback()])
    DoctorCallback().attach(trainer)    # or this, so that W&B and TensorBoard see doctor/* too

The callback keeps the history the trainer logs (``on_log``) and, every ``every_n_steps``
steps, checks it with the same rules and first-alert replay as ``grpo-doctor diagnose`` on the
run's ``trainer_state.json`` (the history is read as that importer reads ``log_history``). It
adds to the logs it checked ``doctor/<mode>`` (0 ok, 1 warning, 2 critical; modes whose metrics
are not logged are left out) and ``doctor/alerts`` (alerts raised so far), prints one line when
training begins, one per new or escalated finding (and one at the end if there was none), and
stops training (``control.should_training_stop``) when a finding
reaches ``stop_on``. As ``watch`` does, it holds a raised finding (its ``doctor/<mode>`` value
included) until it has been clear for ``Settings.clear_after`` logged entries, then prints one
``CLEARED`` line; a critical one eases to 1 only after as many entries below critical.

The Trainer puts its reporting callbacks (W&B, TensorBoard, ...) before those passed with
``callbacks=[...]``, so they have already sent a log when this callback adds its values to it;
``attach(trainer)`` puts the callback first so that they send them too. Either way the values
also go into ``state.log_history`` (and so ``trainer_state.json``) and to every callback after
this one, the console printer included.

A monitor must never be what stops a training run: no hook lets an exception reach the
Trainer. A problem inside the callback (a hostile log, a resumed history it cannot read, a bug)
is warned about once (a ``RuntimeWarning``), counted in ``doctor/errors`` on the next log, and
training goes on. A column map (``Settings(column_map=...)``) applies once its column has been
logged: an evaluation metric logged every 50 steps is not an error at step 10.

Needs ``transformers`` (the ``trl`` extra: transformers and accelerate; torch, CPU or CUDA, is
left to the user and goes in first, since accelerate requires one); importing this module
without it raises an ImportError that says how to install them.
"""

from __future__ import annotations

import contextlib
import functools
import math
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    from transformers import TrainerCallback
except ImportError as exc:  # pragma: no cover - exercised with transformers hidden
    # grpo-doctor has no package-index name, so the extra comes from a clone or a git URL; the
    # extra leaves torch to the user, and accelerate requires one (PyPI's for Linux is a CUDA
    # build), so torch goes first.
    raise ImportError(
        "grpo_doctor.integrations.trl needs transformers. The trl extra installs transformers "
        "and accelerate and leaves torch (CPU or CUDA) to you; accelerate requires torch, and "
        "PyPI's torch for Linux is a CUDA build, so install yours first, e.g. the CPU build "
        "from PyTorch's CPU index:\n"
        "    pip install torch --index-url https://download.pytorch.org/whl/cpu\n"
        "then the extra, from a clone of grpo-doctor:\n"
        '    pip install -e ".[trl]"\n'
        "or from its git repository (grpo-doctor has no package-index name; OWNER: where you "
        "clone it from):\n"
        '    pip install "grpo-doctor[trl] @ git+https://github.com/OWNER/grpo-doctor.git"\n'
        "(or, without the extra: pip install transformers accelerate)"
    ) from exc

from grpo_doctor.config import Settings
from grpo_doctor.findings import check_rank
from grpo_doctor.metrics import ColumnMap
from grpo_doctor.monitor import Alert, Monitor
from grpo_doctor.store import DOCTOR_PREFIX, Run

if TYPE_CHECKING:
    from transformers import TrainerControl, TrainerState, TrainingArguments

#: Prefix of the values the callback logs; never read back as metrics.
PREFIX = DOCTOR_PREFIX
#: The value counting the problems the callback met (and survived); logged once there is one.
ERRORS = f"{PREFIX}errors"


def _guarded(hook: Callable[..., None]) -> Callable[..., None]:
    """A trainer hook that never raises: an exception is warned about (once per hook) and
    counted, and the hook returns as if it had nothing to do."""

    @functools.wraps(hook)
    def guarded(self: DoctorCallback, *args: Any, **kwargs: Any) -> None:
        try:
            hook(self, *args, **kwargs)
        except Exception as exc:  # a monitor must not stop the training run
            self._problem(hook.__name__, exc)

    return guarded


def _step_of(entry: Any) -> int | None:
    """A history entry's step as an integer, or None (not a dict, no step, a step that is
    not a whole finite number: text, NaN, 1e300, a bool)."""
    if not isinstance(entry, dict):
        return None
    step = entry.get("step")
    if isinstance(step, bool) or not isinstance(step, (int, float)):
        return None
    if isinstance(step, float) and not (math.isfinite(step) and step.is_integer()):
        return None
    value = int(step)
    return value if -(1 << 63) <= value < (1 << 63) else None


def _arguments(args: Any) -> dict[str, Any]:
    """The trainer's arguments as settings: their scalar values and lists of scalars
    (``reward_weights``), by their names (``TrainingArguments.to_dict()`` where it has one).
    Nothing else: an accelerator or a DeepSpeed config is no setting the advice reads."""
    try:
        raw = args.to_dict() if hasattr(args, "to_dict") else dict(vars(args))
    except Exception:  # an odd args object must never stop training
        return {}
    scalar = (bool, int, float, str)
    return {k: v for k, v in raw.items() if isinstance(k, str) and (
        isinstance(v, scalar) or (isinstance(v, (list, tuple)) and v
                                  and all(isinstance(x, scalar) for x in v)))}


#: The warnings module's hooks that tell every module's registry of warnings already shown
#: to forget them (each change of the filters calls them; by name across Python versions).
_FORGETTING_HOOKS = ("_filters_mutated", "_filters_mutated_lock_held")


@contextlib.contextmanager
def _shown_warnings_kept() -> Any:
    """Keep the training process's warnings shown once shown once: pandas sets and restores
    warning filters inside ordinary calls (``catch_warnings`` around a dtype lookup), and each
    change makes Python forget which warnings it showed, so the trainer's own deprecation
    warnings printed again at every check (64 FutureWarning lines in place of 16, trial 58).
    The filters come back as they were; only a change that outlives the check is let through."""
    module = sys.modules["warnings"]
    before = list(module.filters)
    saved = {name: getattr(module, name) for name in _FORGETTING_HOOKS if hasattr(module, name)}
    for name in saved:
        setattr(module, name, _no_op)
    try:
        yield
    finally:
        for name, hook in saved.items():
            setattr(module, name, hook)
        if list(module.filters) != before:
            for hook in saved.values():
                with contextlib.suppress(Exception):
                    hook()


def _no_op() -> None:
    return None


class DoctorCallback(TrainerCallback):
    """Checks the logged history every ``every_n_steps`` steps; see the module docstring.

    ``stop_on``: "critical" (default), "warning", or None / "never" to only report.
    ``settings``: thresholds, mapping and selected modes, as ``grpo_doctor.config.Settings``
    (from ``grpo_doctor.config.load_settings()`` to use the project's config file).
    ``print_alerts``: print to stderr (the main process only) one line when training begins,
    one per alert, and one at the end when no alert was raised.
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
        # Every entry optional: it applies once its column has been logged.
        checked = self.settings.checked_map()
        self.column_map = ColumnMap(checked, optional=checked.keys())
        self.monitor = Monitor(self.settings)
        self.history: list[dict[str, Any]] = []
        self.stopped_at: int | None = None  # the step at which it stopped training
        self._checked_at = 0  # global step of the last check
        self._name = "trainer"
        self._config: dict[str, Any] = {}
        self.errors = 0  # problems met inside the callback (each survived)
        self._warned: set[str] = set()

    # -- what it found -----------------------------------------------------------------------

    @property
    def alerts(self) -> list[Alert]:
        return self.monitor.alerts

    def run(self) -> Run | None:
        """The logged history as a Run, read as ``trainer_state.json``'s ``log_history`` is."""
        from grpo_doctor.errors import FormatError
        from grpo_doctor.importers.in_memory import run_from_log_history

        try:
            return run_from_log_history(self.history, name=self._name, source="<trainer>",
                                        column_map=self.column_map, config=self._config)
        except FormatError:  # nothing with a step logged yet
            return None

    def check(self, *, final: bool = False) -> list[Alert]:
        """Check the history now; the new alerts (``final``: training has ended)."""
        with _shown_warnings_kept():
            run = self.run()
            return self.monitor.evaluate(run, final=final) if run is not None and (
                run.n_steps) else []

    def values(self) -> dict[str, float]:
        """The ``doctor/*`` values of the last check."""
        out = {f"{PREFIX}{mode}": float(rank) for mode, rank in self.monitor.severities().items()}
        out[f"{PREFIX}alerts"] = float(len(self.monitor.alerts))
        if self.errors:
            out[ERRORS] = float(self.errors)
        return out

    def attach(self, trainer: Any) -> DoctorCallback:
        """Add this callback to ``trainer`` ahead of its reporting callbacks."""
        callbacks = trainer.callback_handler.callbacks
        if self in callbacks:
            callbacks.remove(self)
        callbacks.insert(0, self)
        return self

    # -- trainer events ----------------------------------------------------------------------

    def _problem(self, hook: str, exc: BaseException) -> None:
        """A problem inside the callback: warned about once per hook, counted; never raised."""
        self.errors += 1
        if hook in self._warned:
            return
        self._warned.add(hook)
        text = " ".join(str(exc).split())[:300]
        with contextlib.suppress(Exception):  # warnings made errors must not stop training
            warnings.warn(f"grpo-doctor: DoctorCallback.{hook} failed "
                          f"({type(exc).__name__}{': ' + text if text else ''}); training goes "
                          f"on, and {ERRORS} counts such problems", RuntimeWarning,
                          stacklevel=3)

    def _entry(self, logs: dict[str, Any], step: int) -> dict[str, Any]:
        entry = {k: v for k, v in logs.items() if not str(k).startswith(PREFIX)}
        entry["step"] = step
        return entry

    @_guarded
    def on_train_begin(self, args: TrainingArguments, state: TrainerState,
                       control: TrainerControl, **kwargs: Any) -> None:
        from grpo_doctor.importers.trainer_state import _config

        # A resumed run starts from its checkpoint's history (entries without a whole-number
        # step, which the trainer never writes, are left out).
        history = getattr(state, "log_history", None)
        self.history = []
        for entry in history if isinstance(history, list) else []:
            step = _step_of(entry)
            if step is not None:
                self.history.append(self._entry(entry, step))
        global_step = _step_of({"step": getattr(state, "global_step", 0)}) or 0
        self._checked_at = global_step // self.every_n_steps * self.every_n_steps
        name = getattr(args, "run_name", None) or Path(
            str(getattr(args, "output_dir", None) or "trainer")).name
        self._name = str(name or "trainer")
        # The trainer's own arguments (GRPOConfig: learning_rate, beta, num_generations,
        # temperature, max_completion_length ...) are the run's settings: the advice weighs
        # them live as it does a saved config. The state's own settings win where both say.
        self._config = {**_arguments(args), **_config(vars(state))}
        # One line that says it is there: silence alone cannot tell a healthy run from a
        # callback that never ran (trial 45).
        stops = {"critical": ", and a critical one stops training",
                 "warning": ", and a warning or critical one stops training"}
        self._say(f"checking this run every {self.every_n_steps} steps; an alert prints "
                  f"here{stops.get(str(self.stop_on), '')}", state)

    @_guarded
    def on_log(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
               logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not isinstance(logs, dict):
            return
        if self.errors:
            logs[ERRORS] = float(self.errors)
        step = _step_of({"step": state.global_step})
        if step is None:
            raise ValueError(f"global_step is not a whole number: {state.global_step!r}")
        self.history.append(self._entry(logs, step))
        if step // self.every_n_steps <= self._checked_at // self.every_n_steps:
            return
        self._checked_at = step
        new = self.check()
        values = self.values()
        logs.update(values)
        last = state.log_history[-1] if state.log_history else None
        if isinstance(last, dict) and last.get("step") == step:
            last.update(values)
        self._report(new, state)
        rank = None if self.stop_on in (None, "never") else check_rank(self.stop_on)
        if rank is not None and any(a.severity.rank >= rank for a in new if not a.news_only):
            control.should_training_stop = True
            self.stopped_at = step

    @_guarded
    def on_train_end(self, args: TrainingArguments, state: TrainerState,
                     control: TrainerControl, **kwargs: Any) -> None:
        if self.history and (self._checked_at < state.global_step or self.monitor.awaiting()):
            self._checked_at = state.global_step
            self._report(self.check(final=True), state)
        self._report(self.monitor.settle(), state)  # the last word on what to do first
        if not self.alerts and self.history:
            # Steps, not entries: the Trainer's closing summary is logged at the last step.
            steps = len({e["step"] for e in self.history})
            self._say(f"no alert over {steps} logged steps (to step "
                      f"{self.history[-1]['step']})", state)

    def _report(self, alerts: list[Alert], state: TrainerState) -> None:
        for alert in alerts:
            self._say(alert.line(), state)

    def _say(self, line: str, state: TrainerState) -> None:
        if self.print_alerts and getattr(state, "is_world_process_zero", True):
            print(f"grpo-doctor: {line}", file=sys.stderr, flush=True)
