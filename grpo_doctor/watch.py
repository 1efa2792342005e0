"""Watching a live run: follow a growing log, re-check the rules at each poll, alert once per
new (or escalated) finding.

    >>> from grpo_doctor.watch import Watcher
    >>> watcher = Watcher("runs/exp1")     # TensorBoard folder, W&B run folder, CSV, JSONL, console
    >>> for alert in watcher.poll():       # call it every few seconds
    ...     print(alert.line())

What is guaranteed
------------------
* ``poll`` reads only what was appended since the previous poll: a byte offset per file, a
  partially written last line (CSV, JSONL, console) or record (TensorBoard, W&B) is left for the
  next poll, and event files that appear in a TensorBoard run folder are picked up.
* The Run it checks is the Run ``diagnose`` builds from the bytes read so far: rebuilt by the
  format's own importer whenever anything but new rows changed, and otherwise extended in place
  (see below), with the same steps, values, logged-NaN evidence and metric mapping.
* An alert is raised at the first poll whose data raises the finding, and carries the
  ``first_alert_step`` that ``diagnose`` computes on that data (``engine.check_rule``: the replay
  of prefixes). With one poll per logged step, that is the last step of the poll that alerted,
  and ``diagnose`` on the finished log reports the same step wherever a finding, once raised,
  stays raised (the replay's coarse scan can only report a later step when a finding comes and
  goes). With coarser polls the alert still carries the replayed earliest step.
* A mode alerts when it first fires, and again if it escalates (warning -> critical), keeping
  its first-alert step. A finding that clears is reported once (``Alert.cleared``), and alerts
  again if it comes back. What is shown between changes (onset, first alert, summary) stays.
* ``WatchAll`` watches every run under a path (a folder of runs, a log holding several), each
  with its own ``Watcher``, and picks up runs that appear later.

Cost of a poll (n logged steps, m metrics, k new rows, r rules)
---------------------------------------------------------------
* Reading: O(new bytes). Files that did not change are not opened.
* The Run: new rows that only append steps (or complete the last one) with known columns are
  transformed and written into preallocated column buffers, O(k m); the frame handed to the
  rules is a zero-copy view, and the finite series the rules read are kept up to date alongside
  (so ``Run.finite_series`` is a cache hit). Anything else (a new column, a restart, a new event
  file, a changed config, a mapping that depends on how often columns are logged) rebuilds the
  Run from the bytes read so far with the offline importer: O(n m), once per such change.
  Console logs that are not verl ``step:N`` lines are re-parsed whole at every poll that brings
  new lines (a printed dict's step depends on what is printed after it).
* The rules: every rule on the whole run, without replay. Each reads binned series (at most
  2,000 points, ``rules.base.series``), so its own work is O(2,000); binning itself is a
  vectorised O(n) pass per series read, which dominates at 10^5 steps and beyond.
* The first-alert replay runs only for a mode that newly fired or escalated: O(log n) rule
  evaluations on prefixes, once per alert.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import subprocess
import tempfile
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from grpo_doctor.api import applied_config, checked_map, doctor_config
from grpo_doctor.config import Settings
from grpo_doctor.engine import assemble, check_rule
from grpo_doctor.errors import ConfigError, FormatError, GrpoDoctorError, InputError
from grpo_doctor.files import check_input, walk
from grpo_doctor.findings import RUN_SEVERITY, Check, Diagnosis, Status
from grpo_doctor.importers import (
    Importer,
    LoadOptions,
    _read_head,
    detect_format,
    importer_named,
)
from grpo_doctor.metrics import map_columns
from grpo_doctor.reporters.escape import json_dumps, terminal
from grpo_doctor.rules.base import fmt
from grpo_doctor.store import Run

# --- alerts -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Alert:
    """A finding that newly fired (or escalated) at one poll, or one that cleared (severity
    ``ok``: it was raised before and no longer is)."""

    mode: str
    severity: Status  # warning or critical; ok when the finding cleared
    first_alert_step: int | None  # as ``diagnose`` computes it on the data seen at this poll
    onset_step: int | None
    summary: str
    step: int | None  # the last logged step when the alert was raised
    previous: Status | None = None  # the severity alerted before (an escalation), else None
    previous_first_alert_step: int | None = None  # what the earlier alert of the mode carried
    remedies: tuple[str, ...] = ()
    run: str = ""
    source: str = ""

    @property
    def cleared(self) -> bool:
        return self.severity is Status.OK

    @property
    def escalated(self) -> bool:
        return self.previous is not None and not self.cleared

    @property
    def event(self) -> str:
        return "cleared" if self.cleared else "alert"

    def line(self) -> str:
        """One line for a log or a terminal (the summary's names from the log escaped: one
        line, no control sequence)."""
        if self.cleared:
            was = self.previous.value if self.previous is not None else "raised"
            return (f"CLEARED {self.mode} (was {was}, first alerted at step "
                    f"{fmt(self.first_alert_step)}): cleared at step {fmt(self.step)}. "
                    f"{terminal(self.summary)}")
        what = f"{self.severity.value.upper()} {self.mode}"
        if self.previous is not None:
            what += f" (escalated from {self.previous.value}"
            if self.previous_first_alert_step != self.first_alert_step:
                what += f", first alerted at step {fmt(self.previous_first_alert_step)}"
            what += ")"
        return (f"{what}: first alert at step {fmt(self.first_alert_step)}, onset "
                f"{fmt(self.onset_step)}, seen at step {fmt(self.step)}. "
                f"{terminal(self.summary)}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "event": self.event, "mode": self.mode, "severity": self.severity.value,
            "previous": self.previous.value if self.previous is not None else None,
            "previous_first_alert_step": self.previous_first_alert_step,
            "first_alert_step": self.first_alert_step, "onset_step": self.onset_step,
            "step": self.step, "summary": self.summary, "remedies": list(self.remedies),
            "run": self.run, "source": self.source,
        }


class Monitor:
    """The alerting half of a watch: the rules over successive Runs of one growing log.

    ``evaluate`` checks every rule without the first-alert replay, and replays only for a mode
    that newly fired or escalated, so the alert carries the ``first_alert_step`` that
    ``diagnose`` would report on the same Run. What it shows is stable: an escalation keeps the
    mode's first-alert step (it never moves backwards), and a finding that keeps its severity
    keeps the onset, first alert and summary it had when it last changed; a finding that clears
    is reported once as cleared (and alerts again if it comes back). Used by :class:`Watcher`
    and by the trainer callback (``grpo_doctor.integrations.trl``).
    """

    def __init__(self, settings: Settings | None = None) -> None:
        self._settings = settings or Settings()
        cfg = doctor_config(self._settings)
        self._rules = cfg.rules()
        self._params = {rule.id: cfg.params_for(rule) for rule in self._rules}
        self.alerted: dict[str, Alert] = {}
        self.alerts: list[Alert] = []
        self.checks: tuple[Check, ...] = ()
        self.run: Run | None = None
        self._shown: dict[str, Check] = {}  # each raised finding as it last changed
        self._cleared_at: dict[str, int | None] = {}  # the step each mode last cleared at

    def evaluate(self, run: Run) -> list[Alert]:
        """Every rule on ``run``; the alerts it raises (new modes, escalations, and findings
        that cleared)."""
        new: list[Alert] = []
        checks: list[Check] = []
        for rule in self._rules:
            params = self._params[rule.id]
            check = check_rule(rule, run, params, with_first_alert=False)
            prev = self.alerted.get(rule.id)
            if check.fired and (prev is None or check.status.rank > prev.severity.rank):
                check = self._raised(check_rule(rule, run, params), prev, run)
                alert = Alert(
                    mode=rule.id, severity=check.status, first_alert_step=check.first_alert_step,
                    onset_step=check.onset_step, summary=check.summary, step=run.last_step,
                    previous=prev.severity if prev is not None else None,
                    previous_first_alert_step=prev.first_alert_step if prev is not None else None,
                    remedies=check.remedies, run=run.name, source=run.source,
                )
                self.alerted[rule.id] = alert
                self._shown[rule.id] = check
                new.append(alert)
            elif check.fired and prev is not None:
                shown = self._shown[rule.id]
                if check.status is shown.status:
                    check = shown  # unchanged: as it was shown
                else:  # eased (critical -> warning): shown anew, its first alert kept
                    check = _onset_by(replace(check, first_alert_step=prev.first_alert_step))
                    self._shown[rule.id] = check
            elif prev is not None and check.status is Status.OK:
                shown = self._shown.pop(rule.id)
                del self.alerted[rule.id]
                self._cleared_at[rule.id] = run.last_step
                new.append(Alert(
                    mode=rule.id, severity=Status.OK, first_alert_step=prev.first_alert_step,
                    onset_step=shown.onset_step, summary=check.summary, step=run.last_step,
                    previous=shown.status, previous_first_alert_step=prev.first_alert_step,
                    run=run.name, source=run.source))
            checks.append(check)
        self.checks = tuple(checks)
        self.run = run
        new.sort(key=lambda a: _step_order(a.first_alert_step))  # as the log raised them
        self.alerts.extend(new)
        return new

    def _raised(self, check: Check, prev: Alert | None, run: Run) -> Check:
        """A finding newly raised or escalated, as it is shown: an escalation keeps the mode's
        first alert; a finding back after it cleared is first alerted after that."""
        first = check.first_alert_step
        if prev is not None and prev.first_alert_step is not None:
            first = prev.first_alert_step
        elif check.mode in self._cleared_at:
            cleared = self._cleared_at[check.mode]
            if first is None or (cleared is not None and first <= cleared):
                first = run.last_step
        return _onset_by(replace(check, first_alert_step=first))

    def diagnosis(self) -> Diagnosis | None:
        """The latest checks as a Diagnosis (first-alert steps from the alerts raised)."""
        run = self.run
        if run is None:
            return None
        return replace(assemble(run, self.checks), config=applied_config(self._settings))

    def severities(self) -> dict[str, int]:
        """0 ok / 1 warning / 2 critical per mode that could be checked (skipped ones left out)."""
        return {c.mode: c.status.rank for c in self.checks if c.status is not Status.SKIPPED}


def _step_order(step: int | None) -> tuple[bool, int]:
    """Sort key: by step, an unknown step last."""
    return step is None, step or 0


def _by_first_alert(checks: Sequence[Check]) -> list[Check]:
    """The findings among ``checks``, in the order they were first alerted."""
    return sorted((c for c in checks if c.fired), key=lambda c: _step_order(c.first_alert_step))


def _onset_by(check: Check) -> Check:
    """A finding alerted at some step had begun by then: its onset is no later."""
    first, onset = check.first_alert_step, check.onset_step
    if first is not None and onset is not None and first < onset:
        return replace(check, onset_step=first)
    return check


# --- new rows -----------------------------------------------------------------------------------


@dataclass
class Rows:
    """Rows read at one poll, in file order: raw column -> values (NaN is a gap unless
    ``explicit`` marks a logged NaN). ``steps`` is given by formats that carry the step
    outside the columns (TensorBoard, W&B, verl lines); otherwise the run's step column, or
    row order counted from ``first_index``, gives it."""

    values: dict[str, np.ndarray] = field(default_factory=dict)
    explicit: dict[str, np.ndarray] = field(default_factory=dict)
    steps: np.ndarray | None = None
    first_index: int = 0
    count: int = 0

    @classmethod
    def from_records(cls, records: Sequence[Mapping[str, float]], *,
                     steps: Sequence[float] | np.ndarray | None = None,
                     first_index: int = 0) -> Rows:
        """Rows from dicts, as the importers that read dicts turn them into a frame."""
        from grpo_doctor.importers.jsonl import records_frame

        frame, explicit = records_frame(records)
        values = {str(c): frame[c].to_numpy(dtype=np.float64) for c in frame.columns}
        masks = {c: explicit.get(c, np.zeros(len(records), dtype=bool)) for c in values}
        given = None if steps is None else np.asarray(steps, dtype=np.float64)
        return cls(values, masks, given, first_index, len(records))

    def __len__(self) -> int:
        return self.count

    def record(self, i: int) -> dict[str, float]:
        """Row ``i`` as a dict of its logged cells (a logged NaN is kept, a gap is absent)."""
        out = {}
        for col, vals in self.values.items():
            v = float(vals[i])
            if v == v or self.explicit[col][i]:
                out[col] = v
        return out

    @staticmethod
    def concat(parts: Sequence[Rows]) -> Rows:
        parts = [p for p in parts if p.count]
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return Rows()
        n = sum(p.count for p in parts)
        cols = list(dict.fromkeys(c for p in parts for c in p.values))
        values = {c: np.full(n, np.nan) for c in cols}
        explicit = {c: np.zeros(n, dtype=bool) for c in cols}
        pos = 0
        for p in parts:
            for c in p.values:
                values[c][pos:pos + p.count] = p.values[c]
                explicit[c][pos:pos + p.count] = p.explicit[c]
            pos += p.count
        given = (np.concatenate([p.steps for p in parts])
                 if all(p.steps is not None for p in parts) else None)
        return Rows(values, explicit, given, parts[0].first_index, n)


@dataclass
class Delta:
    """What one read brought: new rows, and whether more than rows changed (a new file or
    column set, a config record, corruption), which only a rebuild can express."""

    rows: Rows
    structural: bool = False


def _identity(x: np.ndarray) -> np.ndarray:
    return x


class _Growing:
    """A 1-D buffer with amortised appends; ``view()`` is a zero-copy slice."""

    def __init__(self, dtype: Any, values: np.ndarray | None = None) -> None:
        values = np.zeros(0, dtype=dtype) if values is None else np.asarray(values, dtype=dtype)
        self.n = len(values)
        self.buf = np.empty(max(256, 2 * self.n), dtype=dtype)
        self.buf[:self.n] = values

    def extend(self, values: np.ndarray) -> None:
        need = self.n + len(values)
        if need > len(self.buf):
            grown = np.empty(max(2 * len(self.buf), need), dtype=self.buf.dtype)
            grown[:self.n] = self.buf[:self.n]
            self.buf = grown
        self.buf[self.n:need] = values
        self.n = need

    def view(self) -> np.ndarray:
        return self.buf[:self.n]


class LiveStore:
    """The Run of a growing log, extended in place when a poll only brings rows.

    After a rebuild (``seed``) the store holds the Run's canonical columns in preallocated
    buffers. ``append`` writes new rows there when they only add steps after the last one, or
    complete the last step (a TensorBoard step whose scalars were flushed across two polls, a
    train and an eval line at one step), hold no column the Run does not have, and the mapping
    cannot change with them; it returns False otherwise and the caller rebuilds.

    ``policy`` is how rows logged at one step combine, as the format's importer combines them:
    ``"last"`` keeps each metric's last logged value (``build_run`` on repeated steps: CSV, JSONL,
    W&B), ``"update"`` lets a later row's cells replace earlier ones, NaN included (TensorBoard's
    last-written point, verl lines of one step).
    """

    def __init__(self, policy: str = "last", column_map: Mapping[str, str] | None = None) -> None:
        if policy not in ("last", "update"):
            raise ValueError(policy)
        self.policy = policy
        self.column_map = dict(column_map or {})
        self.run: Run | None = None
        self.rebuilds = 0
        self._fast = False
        # The raw row of the latest step, combined over every row logged at it so far, and
        # whether that is known for certain (it is not after a restart within a poll).
        self._chain_step: int | None = None
        self._chain: dict[str, float] = {}
        self._chain_known = False
        self._rows_before = False

    # -- steps and combining rows --------------------------------------------------------

    def _step_mode(self) -> str | None:
        run = self.run
        if run is None:
            return None
        if self.policy == "update" and run.step_source != "given":
            return None
        return run.step_source

    def _steps(self, rows: Rows) -> np.ndarray | None:
        """The steps of ``rows`` as the Run resolves them; None when some row has none."""
        mode = self._step_mode()
        if mode is None:
            return None
        if mode == "given":
            raw = rows.steps
        elif mode == "row order":
            return rows.first_index + np.arange(rows.count, dtype=np.int64)
        else:
            raw = rows.values.get(mode)
        if raw is None or len(raw) != rows.count or not np.isfinite(raw).all():
            return None
        if not ((raw == np.round(raw)) & (np.abs(raw) <= 2.0 ** 53)).all():
            return None  # a fractional or huge step: the importer's rebuild says what it did
        return np.round(raw).astype(np.int64)

    def _combine(self, base: dict[str, float], new: Mapping[str, float]) -> dict[str, float]:
        if self.policy == "update":
            base.update(new)
            return base
        for key, v in new.items():  # the last logged number wins; a NaN only over a gap or NaN
            if v == v or key not in base or base[key] != base[key]:
                base[key] = v
        return base

    def _groups(self, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        starts = np.flatnonzero(np.r_[True, steps[1:] != steps[:-1]]) if len(steps) else \
            np.zeros(0, dtype=np.int64)
        ends = np.r_[starts[1:], len(steps)]
        return starts, ends

    def _track(self, rows: Rows, steps: np.ndarray | None, prev_max: int | None) -> None:
        """Follow the raw row of the latest step after a rebuild."""
        had_rows = self._rows_before
        self._rows_before = self._rows_before or rows.count > 0
        if not rows.count:
            return
        run = self.run
        if steps is None or run is None:
            self._chain_known = False
            return
        starts, ends = self._groups(steps)
        gsteps = steps[starts]
        last = int(gsteps[-1])
        ok = bool(np.all(np.diff(gsteps) > 0)) and last == run.last_step
        if prev_max is None:
            ok = ok and not had_rows
        elif last < prev_max:
            ok = False
        elif last == prev_max:
            ok = ok and self._chain_known and self._chain_step == last and len(gsteps) == 1
        record: dict[str, float] = dict(self._chain) if (prev_max == last) else {}
        for i in range(int(starts[-1]), int(ends[-1])):
            record = self._combine(record, rows.record(i))
        self._chain_step, self._chain, self._chain_known = last, record, ok

    # -- rebuild -------------------------------------------------------------------------

    def seed(self, run: Run | None, rows: Rows | None = None) -> None:
        """Take a Run built by an importer (``None``: no data yet) and the rows it ends with."""
        prev_max = self.run.last_step if self.run is not None else None
        self.rebuilds += 1
        self.run = run
        self._fast = False
        if run is None or run.n_steps == 0:
            self.run = None
            self._chain_known = False
            self._rows_before = self._rows_before or bool(rows and rows.count)
            return
        if rows is not None:
            self._track(rows, self._steps(rows), prev_max)
        else:
            self._chain_known = False
        self._fast = self._prepare(run)

    def _prepare(self, run: Run) -> bool:
        if self._step_mode() is None:
            return False
        raw_cols = list(dict.fromkeys([*run.mapping.values(), *run.unmapped]))
        cm = map_columns(raw_cols, self.column_map, {})
        favour_last = map_columns(raw_cols, self.column_map,
                                  {c: i for i, c in enumerate(raw_cols)})
        # The mapping must not depend on counts (several held-out candidates) and must be the
        # Run's own; then no row with known columns can change it.
        if cm.mapping != favour_last.mapping or cm.mapping != run.mapping:
            return False
        if set(cm.unmapped) != set(run.unmapped):
            return False
        cols: list[tuple[str, str, Callable[[np.ndarray], np.ndarray]]] = []
        for canonical, src in run.mapping.items():
            tf = _identity if canonical in self.column_map else cm.transforms[canonical]
            cols.append((canonical, src, tf))
        for src in run.unmapped:
            cols.append((src if src not in run.mapping else f"raw/{src}", src, _identity))
        if [c[0] for c in cols] != [str(c) for c in run.frame.columns]:
            return False
        self._cols = cols
        self._known = set(raw_cols)
        if run.step_source not in ("given", "row order"):
            self._known.add(run.step_source)
        n = run.n_steps
        cap = max(1024, 2 * n)
        self._block = np.full((len(cols), cap), np.nan)
        self._block[:, :n] = run.frame.to_numpy(dtype=np.float64).T
        self._index = _Growing(np.int64, run.steps)
        self._finite = []
        for key, _src, _tf in cols:
            s, v = run.finite_series(key)
            self._finite.append((_Growing(np.int64, s), _Growing(np.float64, v)))
        self._nan = {k: list(map(int, v)) for k, v in run.nan_steps.items()}
        self._dup = run.duplicate_steps
        return True

    # -- the fast path -------------------------------------------------------------------

    def append(self, rows: Rows) -> bool:
        """Extend the Run by ``rows`` in O(len(rows)); False when only a rebuild can."""
        run = self.run
        if run is None or not self._fast:
            return False
        if not rows.count:
            return True
        if not set(rows.values) <= self._known:
            return False
        steps = self._steps(rows)
        if steps is None:
            return False
        starts, ends = self._groups(steps)
        gsteps = steps[starts]
        last = int(run.last_step)  # type: ignore[arg-type]
        if np.any(np.diff(gsteps) <= 0) or gsteps[0] < last:
            return False
        replace_last = int(gsteps[0]) == last
        if replace_last and not (self._chain_known and self._chain_step == last):
            return False

        g = len(gsteps)
        cols = set(rows.values) | (set(self._chain) if replace_last else set())
        vals = {c: np.full(g, np.nan) for c in cols}
        expl = {c: np.zeros(g, dtype=bool) for c in cols}
        for c in rows.values:
            vals[c][:] = rows.values[c][starts]
            expl[c][:] = rows.explicit[c][starts]
        sizes = ends - starts
        chain = self._chain
        for j in np.flatnonzero((sizes > 1) | ((np.arange(g) == 0) & replace_last)):
            record: dict[str, float] = dict(chain) if (j == 0 and replace_last) else {}
            for i in range(int(starts[j]), int(ends[j])):
                record = self._combine(record, rows.record(i))
            for c in cols:
                v = record.get(c, np.nan)
                vals[c][j] = v
                expl[c][j] = c in record and v != v
            if j == g - 1:
                chain = record
        if sizes[-1] == 1 and not (g == 1 and replace_last):
            chain = rows.record(int(starts[-1]))

        # Write the canonical rows: over the last one when it was completed, then appended.
        n = run.n_steps
        at = n - 1 if replace_last else n
        need = at + g
        if need > self._block.shape[1]:
            grown = np.full((len(self._cols), max(2 * self._block.shape[1], need)), np.nan)
            grown[:, :n] = self._block[:, :n]
            self._block = grown
        if replace_last:
            self._index.n -= 1
        self._index.extend(gsteps)
        for k, (key, src, tf) in enumerate(self._cols):
            raw = vals.get(src)
            if raw is None:
                col = np.full(g, np.nan)
                ex = np.zeros(g, dtype=bool)
            else:
                with np.errstate(all="ignore"):
                    col = np.asarray(tf(raw), dtype=np.float64)
                ex = expl[src]
            self._block[k, at:need] = col
            fs, fv = self._finite[k]
            if replace_last:
                while fs.n and fs.buf[fs.n - 1] == last:
                    fs.n -= 1
                    fv.n -= 1
            ok = np.isfinite(col)
            fs.extend(gsteps[ok])
            fv.extend(col[ok])
            nan = self._nan.get(key)
            if replace_last and nan and nan[-1] == last:
                nan.pop()
            if ex.any():
                self._nan.setdefault(key, []).extend(int(s) for s in gsteps[ex])
        if self.policy == "last":
            self._dup += int(rows.count - g) + int(replace_last)
        self._chain_step, self._chain, self._chain_known = int(gsteps[-1]), chain, True
        self._rows_before = True
        self.run = self._view(run, need)
        return True

    def _view(self, base: Run, n: int) -> Run:
        frame = pd.DataFrame(
            self._block[:, :n].T, index=pd.Index(self._index.view(), name="step", copy=False),
            columns=base.frame.columns, copy=False,
        )
        finite = {key: (fs.view(), fv.view())
                  for (key, _s, _t), (fs, fv) in zip(self._cols, self._finite)}
        nan_steps = {k: np.asarray(v, dtype=np.int64) for k, v in self._nan.items() if v}
        return Run(
            name=base.name, source=base.source, format=base.format, frame=frame,
            config=base.config, mapping=base.mapping, conversions=base.conversions,
            proxies=base.proxies, unmapped=base.unmapped, nan_steps=nan_steps,
            step_source=base.step_source, duplicate_steps=self._dup, restarts=base.restarts,
            notes=base.notes, summary=base.summary, _finite=finite,
        )


# --- sources: reading what was appended ---------------------------------------------------------


class Restarted(Exception):
    """The file shrank or was replaced: the log started over."""


def _snapshot(path: Path, size: int, folder: Path) -> Path:
    """The first ``size`` bytes of ``path``, copied into ``folder`` under the same name."""
    out = folder / path.name
    with path.open("rb") as src, out.open("wb") as dst:
        left = size
        while left > 0:
            chunk = src.read(min(left, 1 << 22))
            if not chunk:
                break
            dst.write(chunk)
            left -= len(chunk)
    return out


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with path.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < offset:
                raise Restarted(f"{path} shrank from {offset} to {size} bytes")
            fh.seek(offset)
            return fh.read(size - offset)
    except FileNotFoundError:
        raise Restarted(f"{path} disappeared") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc


#: Bytes at each end of what was consumed of a file, compared to tell an append from a rewrite.
_MARK_BYTES = 4096


def _marks(path: Path, offset: int) -> tuple[int, int]:
    """Checksums of the first and the last ``_MARK_BYTES`` of the first ``offset`` bytes."""
    if offset <= 0:
        return (0, 0)
    try:
        with path.open("rb") as fh:
            head = fh.read(min(offset, _MARK_BYTES))
            fh.seek(max(0, offset - _MARK_BYTES))
            tail = fh.read(min(offset, _MARK_BYTES))
    except FileNotFoundError:
        raise Restarted(f"{path} disappeared") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    return (zlib.crc32(head), zlib.crc32(tail))


@dataclass
class FileIdentity:
    """What a watched file was when it was last read: its inode, size and modification time,
    and checksums of the ends of what was consumed. ``changed`` tells new bytes from nothing
    new, and raises ``Restarted`` for a file replaced (another inode), truncated, or rewritten
    in place (same inode, the consumed bytes differ: a size check alone misses a rewrite to
    the same length)."""

    inode: tuple[int, int] | None = None
    size: int = -1
    mtime: int = -1
    consumed: int = 0
    marks: tuple[int, int] = (0, 0)

    def changed(self, path: Path) -> bool:
        """Whether ``path`` may hold new bytes since ``mark``; raises ``Restarted``."""
        try:
            st = path.stat()
        except OSError:
            raise Restarted(f"{path} disappeared") from None
        inode = (st.st_dev, st.st_ino)
        if self.inode is not None and inode != self.inode:
            raise Restarted(f"{path} was replaced")
        if st.st_size < self.consumed:
            raise Restarted(f"{path} shrank from {self.consumed} to {st.st_size} bytes")
        if (st.st_size, st.st_mtime_ns) == (self.size, self.mtime):
            return False
        if self.consumed and _marks(path, self.consumed) != self.marks:
            raise Restarted(f"{path} was rewritten")
        self.inode, self.size, self.mtime = inode, st.st_size, st.st_mtime_ns
        return st.st_size > self.consumed

    def mark(self, path: Path, consumed: int) -> None:
        """``consumed`` bytes of ``path`` have been read."""
        if consumed != self.consumed:
            self.consumed = consumed
            self.marks = _marks(path, consumed)


class Source:
    """Reads one growing run: ``read`` what was appended, ``rebuild`` the Run from all read."""

    policy = "last"
    format = ""

    def __init__(self, path: Path, options: LoadOptions) -> None:
        self.path = path
        self.options = options

    def read(self, final: bool = False) -> Delta | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def rebuild(self) -> Run | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def wandb_target(self) -> WandbTarget | None:
        return None


class _TextSource(Source):
    """A text log read line by line: only complete lines are consumed."""

    importer_name = ""

    def __init__(self, path: Path, options: LoadOptions) -> None:
        super().__init__(path, options)
        self.format = self.importer_name
        self.offset = 0
        self.identity = FileIdentity()

    def _new_text(self, final: bool) -> str | None:
        if not self.identity.changed(self.path) and not final:
            return None
        data = _read_from(self.path, self.offset)
        cut = len(data) if final else data.rfind(b"\n") + 1
        if cut <= 0:
            return None
        text = data[:cut].decode("utf-8", errors="replace").replace("\x00", "")
        if self.offset == 0:
            text = text.lstrip("\ufeff")
        self.offset += cut
        self.identity.mark(self.path, self.offset)
        return text

    def _load_snapshot(self) -> Run | None:
        """The Run the offline importer reads from the bytes consumed so far."""
        if self.offset == 0:
            return None
        imp = importer_named(self.importer_name)
        with tempfile.TemporaryDirectory(prefix="grpo-doctor-watch-") as tmp:
            copy = _snapshot(self.path, self.offset, Path(tmp))
            try:
                runs = imp.load(copy, self.options)
            except FormatError:
                return None  # a header without rows, nothing recognisable yet
        return _pick(runs, self.options, str(self.path), source=str(self.path))

    def rebuild(self) -> Run | None:
        return self._load_snapshot()


class SeveralRuns(InputError):
    """A source holds several runs; ``names`` picks each (``--run``). ``WatchAll`` watches them
    all, one ``Watcher`` each."""

    def __init__(self, where: str, names: Sequence[str], what: str = "runs",
                 how: str = "--run NAME") -> None:
        self.names = list(names)
        shown = ", ".join(self.names[:8])
        super().__init__(f"{where} holds {len(self.names)} {what} ({shown}); pick one with {how}")


def _pick(runs: list[Run], options: LoadOptions, where: str, *,
          source: str | None = None) -> Run | None:
    """The run ``options.run`` names, or the only one; ``source`` replaces a snapshot's path."""
    if source is not None:
        for run in runs:
            run.source = source
    if options.run is not None:
        runs = [r for r in runs if r.name == options.run]
        if not runs:
            return None
    if len(runs) > 1:
        raise SeveralRuns(where, [r.name for r in runs])
    return runs[0] if runs else None


_BOOL_WORDS = {"true": 1.0, "false": 0.0}


def _text_cells(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSV cells (strings) as the CSV importer reads them: numbers, ``nan`` as a logged NaN,
    ``inf``, an empty cell or other text as a gap, true/false as a boolean column is read."""
    from grpo_doctor.store import _to_float

    try:
        values = cells.astype(np.float64)  # numbers, nan and inf words: the common case
    except ValueError:
        series = pd.Series(cells, dtype="string").replace("", pd.NA)
        values, explicit = _to_float(series)
        words = series.str.strip().str.lower().to_numpy(dtype=object, na_value="")
        for word, value in _BOOL_WORDS.items():
            values[words == word] = value
        return values, explicit
    return values, np.isnan(values)


def _csv_cells(text: str, width: int, delimiter: str) -> list[np.ndarray]:
    """The cells of CSV lines, one array of strings per column (short rows padded, long ones
    cut, blank lines skipped, as the CSV importer reads them)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    names = [f"c{i}" for i in range(width)]
    try:
        table = pacsv.read_csv(
            io.BytesIO(text.encode("utf-8")),
            read_options=pacsv.ReadOptions(column_names=names, block_size=1 << 24),
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=pacsv.ConvertOptions(column_types=dict.fromkeys(names, pa.string()),
                                                 strings_can_be_null=False),
        )
        return [col.to_numpy(zero_copy_only=False).astype(object) for col in table.columns]
    except pa.ArrowInvalid:  # ragged rows: the csv module is forgiving
        import csv

        csv.field_size_limit(1 << 30)
        body = [(r + [""] * width)[:width]
                for r in csv.reader(io.StringIO(text), delimiter=delimiter) if r]
        return [np.array([r[j] for r in body], dtype=object) for j in range(width)]


class CsvSource(_TextSource):
    importer_name = "csv"

    def __init__(self, path: Path, options: LoadOptions) -> None:
        super().__init__(path, options)
        self.header: list[str] | None = None
        self.delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
        self.count = 0
        self.several_runs = False

    def read(self, final: bool = False) -> Delta | None:
        import csv

        from grpo_doctor.metrics import find_run_column

        text = self._new_text(final)
        if text is None:
            return None
        structural = False
        if self.header is None:
            first, _, text = text.partition("\n")
            self.header = next(csv.reader([first.rstrip("\r")], delimiter=self.delimiter), [])
            self.several_runs = find_run_column(self.header) is not None
            structural = True
        values: dict[str, np.ndarray] = {}
        explicit: dict[str, np.ndarray] = {}
        count = 0
        if text.strip():
            cells = _csv_cells(text, len(self.header), self.delimiter)
            count = len(cells[0]) if cells else 0
            for name, column in zip(self.header, cells):  # a repeated name: the last one wins
                values[name], explicit[name] = _text_cells(column)
        rows = Rows(values, explicit, None, self.count, count)
        self.count += count
        return Delta(rows, structural or self.several_runs)


class JsonlSource(_TextSource):
    importer_name = "jsonl"

    def __init__(self, path: Path, options: LoadOptions) -> None:
        super().__init__(path, options)
        self.count = 0

    def read(self, final: bool = False) -> Delta | None:
        from grpo_doctor.importers.jsonl import _parse_lines

        text = self._new_text(final)
        if text is None:
            return None
        records, _bad = _parse_lines(text)
        rows = Rows.from_records(records, first_index=self.count)
        self.count += len(records)
        return Delta(rows)


class ConsoleSource(_TextSource):
    """Console logs: verl ``step:N - key:value`` lines are read line by line; other shapes
    (printed dicts, tables) are re-parsed whole, since a printed dict's step can depend on what
    is printed after it."""

    importer_name = "console"
    policy = "update"

    def __init__(self, path: Path, options: LoadOptions) -> None:
        super().__init__(path, options)
        self.kind = ""

    def read(self, final: bool = False) -> Delta | None:
        from grpo_doctor.importers.console import _verl_records, split_segments

        text = self._new_text(final)
        if text is None:
            return None
        steps, records = _verl_records(split_segments(text))
        rows = Rows.from_records(records, steps=steps)
        return Delta(rows, structural=self.kind != "verl")

    def rebuild(self) -> Run | None:
        from grpo_doctor.importers.console import log_to_run, parse_console

        if self.offset == 0:
            return None
        with self.path.open("rb") as fh:
            data = fh.read(self.offset)
        text = data.decode("utf-8", errors="replace").lstrip("\ufeff").replace("\x00", "")
        log = parse_console(text)
        self.kind = log.kind
        if not log.kind:
            return None
        return log_to_run(log, self.path, "console", self.options)


@dataclass
class _FileState:
    offset: int = 0  # end of the last complete record consumed
    identity: FileIdentity = field(default_factory=FileIdentity)
    records: int = 0


class TensorBoardSource(Source):
    """A TensorBoard run: its event files read record by record from where each left off."""

    policy = "update"
    format = "tensorboard"

    def __init__(self, path: Path, options: LoadOptions) -> None:
        super().__init__(path, options)
        self.name: str | None = None
        self.run_source = str(path)
        self.folder: Path | None = None
        self.files: dict[Path, _FileState] = {}
        self.plugin_of: dict[str, str] = {}

    def _event_files(self) -> list[Path] | None:
        from grpo_doctor.importers.tensorboard import _discover, _event_file_key, _is_event_file

        if self.name is None:
            found = _discover(self.path)
            if self.options.run is not None:
                found = [f for f in found if f[0] == self.options.run]
            if not found:
                return None
            if len(found) > 1:
                raise SeveralRuns(str(self.path), [f[0] for f in found])
            self.name, _files, self.run_source = found[0]
            self.folder = None if self.path.is_file() else Path(self.run_source)
        if self.folder is None:
            return [self.path]
        try:
            files = [p for p in self.folder.iterdir() if _is_event_file(p.name) and p.is_file()]
        except OSError:
            return []
        return sorted(files, key=_event_file_key)

    def read(self, final: bool = False) -> Delta | None:
        files = self._event_files()
        if files is None:
            return None
        structural = False
        parts: list[Rows] = []
        changed = False
        for path in files:
            state = self.files.get(path)
            if state is None:
                state = self.files[path] = _FileState()
                structural = True
            if not state.identity.changed(path):
                continue
            changed = True
            rows, odd = self._read_file(path, state)
            state.identity.mark(path, state.offset)
            structural = structural or odd
            if rows is not None:
                parts.append(rows)
        if not changed and not structural:
            return None
        return Delta(Rows.concat(parts), structural)

    def _read_file(self, path: Path, state: _FileState) -> tuple[Rows | None, bool]:
        from grpo_doctor.importers import tensorboard as tb

        data = _read_from(path, state.offset)
        if len(data) < 12:
            return None, False
        buf = tb._Buffer(bytearray(data) + bytes(tb._Buffer._PAD), len(data))
        odd = False
        try:
            framing = tb._frame(buf, str(path))
        except FormatError:
            # No record starts where the last one ended: corruption. Skip to the next header.
            nxt = tb._resync(buf, 1)
            if nxt is None:
                return None, False
            state.offset += nxt
            return self._read_file(path, state)[0], True
        if not len(framing.offsets):
            return None, False
        odd = any(not n.startswith("truncated final record") for n in framing.notes)
        points = tb._decode(buf, framing, 0, str(path))
        odd = odd or bool(points.texts) or len(points.notes) > len(framing.notes)
        state.offset += int(framing.offsets[-1] + framing.lengths[-1] + 16)
        state.records += len(framing.offsets)
        for name, _order, plugin in sorted(points.plugins, key=lambda t: t[1]):
            if name not in self.plugin_of:
                self.plugin_of[name] = plugin
                odd = True  # a plugin named for the first time may refuse earlier points
        if not points.tag_idx:
            return None, odd
        tag = np.concatenate(points.tag_idx)
        step = np.concatenate(points.steps)
        value = np.concatenate(points.values)
        order = np.concatenate(points.order)
        tensor = np.concatenate(points.tensor)
        refused = np.array([self.plugin_of.get(t, "") not in ("", "scalars")
                            for t in points.tags], dtype=bool)
        keep = ~(tensor & refused[tag])
        if not keep.any():
            return None, odd
        steps, grid, explicit, _ = tb._pivot(tag[keep], step[keep], value[keep], order[keep],
                                             len(points.tags))
        present = ~np.isnan(grid) | explicit
        cols = np.flatnonzero(present.any(axis=0))
        rows = Rows({points.tags[j]: grid[:, j] for j in cols},
                    {points.tags[j]: explicit[:, j] for j in cols},
                    steps.astype(np.float64), 0, len(steps))
        return rows, odd

    def rebuild(self) -> Run | None:
        from grpo_doctor.importers.tensorboard import _load_run

        files = [(p, s.offset) for p, s in self.files.items() if s.offset > 0]
        if not files or self.name is None:
            return None
        with tempfile.TemporaryDirectory(prefix="grpo-doctor-watch-") as tmp:
            copies = [_snapshot(p, size, Path(tmp)) for p, size in files]
            try:
                return _load_run(self.name, copies, self.run_source, self.options)
            except FormatError:
                return None


@dataclass(frozen=True)
class WandbTarget:
    """The W&B run being watched, for ``--notify wandb``."""

    entity: str
    project: str
    run_id: str
    offline: bool
    folder: Path


class _LevelDBTail:
    """The records of a growing ``.wandb`` log (LevelDB-log framing, see
    ``importers.wandb_offline``), read from where the last read stopped: a chunk not yet fully
    written is read again next time."""

    def __init__(self) -> None:
        self.pos = 0
        self.pending: list[bytes] | None = None
        self.corrupt = 0

    def feed(self, data: bytes) -> list[bytes]:
        """Complete records in ``data``, the file's bytes from ``self.pos`` to its end."""
        from grpo_doctor.importers.wandb_offline import (
            _BLOCK,
            _CHUNK,
            _FIRST,
            _FULL,
            _HEADER,
            _LAST,
            _TYPE_CRC,
        )

        base = self.pos
        end_of_data = base + len(data)
        pos = base
        out: list[bytes] = []
        if pos == 0:
            if len(data) < _HEADER.size:
                return out
            pos = _HEADER.size
        while True:
            left = _BLOCK - pos % _BLOCK
            if left < _CHUNK.size:  # block trailer
                pos += left
                continue
            if pos + _CHUNK.size > end_of_data:
                break
            crc, length, kind = _CHUNK.unpack_from(data, pos - base)
            if kind == 0 and length == 0 and crc == 0:  # zero padding: the block's rest
                pos += left
                continue
            end = pos + _CHUNK.size + length
            fits = length <= left - _CHUNK.size
            if kind in _TYPE_CRC and fits and end > end_of_data:
                break  # not fully written yet
            chunk = data[pos + _CHUNK.size - base:end - base]
            if kind not in _TYPE_CRC or not fits or zlib.crc32(chunk, _TYPE_CRC[kind]) != crc:
                self.corrupt += 1
                self.pending = None
                pos += left
                continue
            pos = end
            if kind == _FULL:
                self.pending = None
                out.append(chunk)
            elif kind == _FIRST:
                self.pending = [chunk]
            elif self.pending is not None:
                self.pending.append(chunk)
                if kind == _LAST:
                    out.append(b"".join(self.pending))
                    self.pending = None
        self.pos = pos
        return out


class WandbSource(Source):
    """A W&B run folder: its ``run-<id>.wandb`` transaction log read record by record."""

    format = "wandb-offline"

    def __init__(self, path: Path, options: LoadOptions) -> None:
        super().__init__(path, options)
        self.file: Path | None = None
        self.tail = _LevelDBTail()
        self.identity = FileIdentity()
        self.media: set[str] = set()
        self.target: dict[str, str] = {}

    def _locate(self) -> Path | None:
        from grpo_doctor.importers.wandb_offline import _log_files

        if self.file is None:
            files = sorted(_log_files(self.path))
            if self.options.run is not None:
                want = self.options.run
                files = [f for f in files if want in (f.parent.name, f.stem, f.stem[4:])
                         or f.parent.name.endswith(f"-{want}")]
            if not files:
                return None
            if len(files) > 1:
                raise SeveralRuns(str(self.path), [f.parent.name for f in files], "W&B runs",
                                  "--run (its folder name or run id)")
            self.file = files[0]
        return self.file

    def read(self, final: bool = False) -> Delta | None:
        from google.protobuf.message import DecodeError
        from wandb.proto import wandb_internal_pb2 as pb

        path = self._locate()
        if path is None:
            return None
        if not self.identity.changed(path):
            return None
        corrupt = self.tail.corrupt
        structural = self.tail.pos == 0
        records = self.tail.feed(_read_from(path, self.tail.pos))
        self.identity.mark(path, self.tail.pos)
        structural = structural or self.tail.corrupt > corrupt
        steps: list[float] = []
        rows: list[dict[str, float]] = []
        for raw in records:
            try:
                rec = pb.Record.FromString(raw)  # type: ignore[attr-defined]
            except DecodeError:
                structural = True
                continue
            kind = rec.WhichOneof("record_type")
            if kind == "history":
                step, row = self._history_row(rec.history)
                if step is None:
                    structural = True
                    continue
                steps.append(step)
                rows.append(row)
            elif kind == "run":
                run = rec.run
                for key, value in (("entity", run.entity), ("project", run.project),
                                   ("run_id", run.run_id)):
                    if value:
                        self.target[key] = value
                structural = True
            elif kind == "config" or (kind == "metric" and rec.metric.glob_name == "*"
                                      and rec.metric.step_metric):
                structural = True
        return Delta(Rows.from_records(rows, steps=steps), structural)

    def _history_row(self, hist: Any) -> tuple[float | None, dict[str, float]]:
        """One history record as ``importers.wandb_offline`` reads it: (step, numeric cells)."""
        from grpo_doctor.importers.wandb_offline import (
            _INTERNAL,
            _flatten,
            _float,
            _is_number,
            _loads,
        )

        items = {("/".join(i.nested_key) if i.nested_key else i.key): i.value_json
                 for i in hist.item}
        self.media.update(k[: -len("/_type")] for k in items if k.endswith("/_type"))
        step: float | None = None
        row: dict[str, float] = {}
        for key, text in items.items():
            try:
                value = _loads(text)
            except ValueError:
                continue
            if key == "_step":
                if _is_number(value):
                    step = _float(value)
                continue
            if key in _INTERNAL or key == "_wandb" or key.startswith("_wandb/"):
                continue
            flat: dict[str, Any] = {}
            if isinstance(value, dict):
                _flatten(key, value, flat)
            else:
                flat[key] = value
            for k, v in flat.items():
                if k.endswith("/_type") or any(k.startswith(m + "/") for m in self.media):
                    continue
                if _is_number(v):
                    row[k] = _float(v)
        if step is None and hist.HasField("step"):
            step = float(hist.step.num)
        return step, row

    def rebuild(self) -> Run | None:
        from grpo_doctor.importers.wandb_offline import _load_log, _run_names, read_wandb_log

        if self.file is None or self.tail.pos == 0:
            return None
        with tempfile.TemporaryDirectory(prefix="grpo-doctor-watch-") as tmp:
            copy = _snapshot(self.file, self.tail.pos, Path(tmp))
            try:
                log = read_wandb_log(copy)
            except FormatError:
                return None
        log.path = self.file
        if log.n_rows == 0:
            return None
        name = self.options.run or _run_names([log])[0]
        try:
            return _load_log(log, name, self.options)
        except FormatError:
            return None

    def wandb_target(self) -> WandbTarget | None:
        if self.file is None or "run_id" not in self.target:
            return None
        folder = self.file.parent
        return WandbTarget(self.target.get("entity", ""), self.target.get("project", ""),
                           self.target["run_id"], folder.name.startswith("offline-run"), folder)


class ReloadSource(Source):
    """Any other format (trainer_state.json, parquet, notebooks, exports): read whole again
    whenever its files change; they are rewritten rather than appended to."""

    def __init__(self, path: Path, options: LoadOptions, importer: Importer) -> None:
        super().__init__(path, options)
        self.importer = importer
        self.format = importer.name
        self.stamp: tuple[Any, ...] | None = None
        self.last: Run | None = None

    def _stamp(self) -> tuple[Any, ...]:
        def one(p: Path) -> tuple[str, int, int]:
            st = p.stat()
            return (str(p), st.st_mtime_ns, st.st_size)

        if self.path.is_file():
            return (one(self.path),)
        out = []
        for _folder, _dirs, files in walk(self.path, max_depth=2):
            for entry in files:
                with contextlib.suppress(OSError):
                    out.append(one(Path(entry.path)))
        return tuple(sorted(out))

    def read(self, final: bool = False) -> Delta | None:
        stamp = self._stamp()
        if stamp == self.stamp:
            return None
        self.stamp = stamp
        return Delta(Rows(), structural=True)

    def rebuild(self) -> Run | None:
        try:
            runs = self.importer.load(self.path, self.options)
        except FormatError:
            return self.last  # caught mid-rewrite: keep what was read before
        self.last = _pick(runs, self.options, str(self.path))
        return self.last


#: Formats read incrementally; any other format is read whole again when its files change.
_SOURCES: dict[str, type[Source]] = {
    "csv": CsvSource, "jsonl": JsonlSource, "console": ConsoleSource,
    "tensorboard": TensorBoardSource, "wandb-offline": WandbSource,
}


# --- the watcher --------------------------------------------------------------------------------


class Watcher:
    """Follows one growing run and re-checks it at each ``poll`` (see the module docstring).

    ``format`` names the input format (as ``--input-format``); by default it is detected once
    the log has content. ``run`` picks one run from a folder or file holding several.
    """

    def __init__(self, path: str | os.PathLike[str], settings: Settings | None = None, *,
                 format: str | None = None, run: str | None = None,
                 step_column: str | None = None) -> None:
        self.path = Path(path)
        if self.path.exists():
            check_input(self.path)  # a FIFO or a device: refused now, not at the first poll
        self.settings = settings or Settings()
        self.options = LoadOptions(column_map=checked_map(self.settings.column_map),
                                   step_column=step_column, run=run)
        self._format = importer_named(format).name if format else None
        self.monitor = Monitor(self.settings)
        self.source: Source | None = None
        self.store: LiveStore | None = None
        self.polls = 0
        self.restarts = 0
        self.last_poll_seconds = 0.0

    # -- state -------------------------------------------------------------------------------

    @property
    def run(self) -> Run | None:
        """The Run as of the last poll. Extended in place by later polls: copy it to keep it."""
        return self.store.run if self.store is not None else None

    @property
    def alerts(self) -> list[Alert]:
        return self.monitor.alerts

    @property
    def checks(self) -> tuple[Check, ...]:
        return self.monitor.checks

    @property
    def status(self) -> str:
        """healthy, warning or critical, as of the last poll (healthy before any data)."""
        diagnosis = self.monitor.diagnosis()
        return diagnosis.status if diagnosis is not None else "healthy"

    def diagnosis(self) -> Diagnosis | None:
        return self.monitor.diagnosis()

    @property
    def format(self) -> str | None:
        return self.source.format if self.source is not None else self._format

    def wandb_target(self) -> WandbTarget | None:
        return self.source.wandb_target() if self.source is not None else None

    # -- polling -----------------------------------------------------------------------------

    def _open(self) -> Source | None:
        """The source for the log, once there is enough of it to tell its format."""
        path = self.path
        if not path.exists():
            return None
        head = b"" if path.is_dir() else _read_head(path)
        if path.is_file() and not head:
            return None
        if self._format is not None:
            imp = importer_named(self._format)
        else:
            try:
                imp = detect_format(path)
            except FormatError:
                if path.is_dir() or b"\n" not in head:
                    return None  # an empty folder, a first line still being written
                raise
            if imp.name in ("csv", "jsonl", "console") and b"\n" not in head:
                return None  # told from a partial first line: wait for the line to end
        cls = _SOURCES.get(imp.name)
        if cls is None:
            return ReloadSource(path, self.options, imp)
        return cls(path, self.options)

    def poll(self, *, final: bool = False) -> list[Alert]:
        """Read what was appended, update the Run, re-check the rules; the new alerts.

        ``final``: the log is complete, so a last line without a newline is read too (as
        ``diagnose`` reads it); otherwise it is left for the next poll.
        """
        import time

        start = time.perf_counter()
        self.polls += 1
        try:
            return self._poll(final)
        finally:
            self.last_poll_seconds = time.perf_counter() - start

    def _poll(self, final: bool) -> list[Alert]:
        if self.source is None:
            self.source = self._open()
            if self.source is None:
                return []
            self.store = LiveStore(self.source.policy, self.options.column_map)
        assert self.store is not None
        try:
            delta = self.source.read(final)
        except Restarted:
            # The log was truncated, replaced or rewritten: start over on what it holds now.
            # The monitor keeps the alerts it sent: the same finding in the rewritten log is
            # not news (an escalation still is).
            self.restarts += 1
            self.source, self.store = None, None
            return self._poll(final)
        if delta is None or not (delta.rows.count or delta.structural):
            return []
        store = self.store
        if delta.structural or not store.append(delta.rows):
            store.seed(self.source.rebuild(), delta.rows)
        if store.run is None:
            return []
        return self.monitor.evaluate(store.run)


class WatchAll:
    """Every run under a path, each followed by its own :class:`Watcher`: the runs of a folder
    (found as ``audit`` finds them: a TensorBoard or W&B run folder, a log file), the runs of a
    log that holds several (``--run`` would pick one), and runs that appear later (a training
    job started after the watch). A path that is one run is watched as ``Watcher`` watches it.

    In a folder of runs, a file that is not (yet) recognisable as a log waits for the next
    poll, and a run that cannot be read is reported once (``problems``) and left out, so one
    broken log never stops the others.
    """

    def __init__(self, path: str | os.PathLike[str], settings: Settings | None = None, *,
                 format: str | None = None, run: str | None = None,
                 step_column: str | None = None) -> None:
        self.path = Path(path)
        if self.path.exists():
            check_input(self.path)  # a FIFO or a device: refused now, not at the first poll
        self.settings = settings or Settings()
        self._format = format
        self._run = run  # only the run(s) of this name
        self._step_column = step_column
        self.watchers: dict[str, Watcher] = {}
        self._dropped: set[str] = set()
        self._split = False  # a log held several runs
        self.problems: list[str] = []  # a run left out, and why (each once)
        self.polls = 0
        self.last_poll_seconds = 0.0

    def members(self) -> list[Watcher]:
        """The runs watched (with ``run``: those of that name, once they have data)."""
        found = list(self.watchers.values())
        if self._run is None:
            return found
        return [w for w in found if w.run is not None] or found[:1]

    def wandb_target(self) -> WandbTarget | None:
        """The W&B run watched, when the path is one run (``--notify wandb``)."""
        members = self.members()
        return members[0].wandb_target() if len(members) == 1 and not self.several else None

    @property
    def several(self) -> bool:
        """Watching more than the one run at the path (alerts and statuses name their run)."""
        return self._split or len(self.members()) > 1 or any(
            w.path != self.path for w in self.members())

    def _sources(self) -> list[Path]:
        """The runs to watch now: the path itself (a file, or a folder that is one run), or
        the run folders and log files under it."""
        from grpo_doctor.audit import classify, expand

        if not self.path.is_dir():
            return [self.path] if self.path.exists() else []
        try:
            sources, _ = expand([str(self.path)])
        except GrpoDoctorError:
            return []
        out = []
        for src in sources:
            path = Path(src.path)
            if src.format is None:  # a file: watched once it is recognisably a log
                try:
                    if classify(path) is None:
                        continue
                except GrpoDoctorError:
                    continue  # named like a log, not readable yet (still being written)
            out.append(path)
        return out

    def _add(self, path: Path, run: str | None = None) -> Watcher | None:
        key = str(path) if run is None else f"{path}\0{run}"
        if key in self.watchers or key in self._dropped:
            return None
        inside = [k for k, w in self.watchers.items()
                  if w.path != path and w.path.is_relative_to(path)]
        if any(self.watchers[k].run is not None for k in inside):
            return None  # its files are watched one by one already: keep their alerts
        if any(path != w.path and path.is_relative_to(w.path) for w in self.watchers.values()):
            return None  # already watched through its folder
        for k in inside:  # a file first (while empty), now known as its run's folder
            del self.watchers[k]
        watcher = Watcher(path, self.settings, format=self._format, run=run or self._run,
                          step_column=self._step_column)
        self.watchers[key] = watcher
        return watcher

    def poll(self, *, final: bool = False) -> list[Alert]:
        """Pick up new runs, then poll each; the alerts of all of them."""
        import time

        start = time.perf_counter()
        self.polls += 1
        for path in self._sources():
            self._add(path)
        alerts: list[Alert] = []
        pending = list(self.watchers.items())
        while pending:
            key, watcher = pending.pop(0)
            try:
                alerts += watcher.poll(final=final)
            except SeveralRuns as exc:  # one watcher per run of the source
                self._split = True
                del self.watchers[key]
                self._dropped.add(key)
                for name in exc.names:
                    member = self._add(watcher.path, name)
                    if member is not None:
                        pending.append((f"{watcher.path}\0{name}", member))
            except GrpoDoctorError as exc:
                if watcher.path == self.path and watcher.options.run is None:
                    raise  # the one run asked for cannot be read: a usage error
                del self.watchers[key]
                self._dropped.add(key)
                self.problems.append(str(exc))
        self.last_poll_seconds = time.perf_counter() - start
        return alerts


# --- notifications ------------------------------------------------------------------------------


class CommandNotifier:
    """``--notify cmd:COMMAND``: run COMMAND (split like a shell would, never through one) with
    the alert as JSON on stdin. Returns a warning line when it fails."""

    def __init__(self, command: str, timeout: float = 60.0) -> None:
        try:
            self.argv = shlex.split(command)
        except ValueError as exc:
            raise ConfigError(f"--notify cmd:{command}: {exc}") from None
        if not self.argv:
            raise ConfigError("--notify cmd: needs a command, e.g. cmd:'notify-send grpo-doctor'")
        self.timeout = timeout

    def __call__(self, alert: Alert) -> str | None:
        payload = json.dumps(alert.to_dict(), ensure_ascii=False, default=str)
        try:
            done = subprocess.run(self.argv, input=payload, text=True, capture_output=True,
                                  timeout=self.timeout, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"--notify cmd: {self.argv[0]} failed: {exc}"
        if done.returncode != 0:
            tail = (done.stderr or "").strip().splitlines()[-1:] or [""]
            return f"--notify cmd: {self.argv[0]} exited {done.returncode} {tail[0]}".rstrip()
        return None


def _wandb_credentials() -> bool:
    """Whether an API key is configured (environment or netrc), without asking the network."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    import netrc
    from urllib.parse import urlparse

    host = urlparse(os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai").hostname or ""
    try:
        return netrc.netrc().authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False


class WandbNotifier:
    """``--notify wandb``: ``alert`` on the watched W&B run, joined as a secondary writer (W&B
    "shared" mode, so the training process keeps the run). Without a W&B run or credentials it
    says so once and stays silent."""

    def __init__(self, watcher: Watcher | WatchAll) -> None:
        self.watcher = watcher
        self.run: Any = None
        self.disabled: str | None = None

    def problem(self) -> str | None:
        """Why alerts cannot be sent (None when they can), once the run is known."""
        if isinstance(self.watcher, WatchAll) and self.watcher.several:
            return (f"--notify wandb: {self.watcher.path} holds several runs; alerts go to one "
                    "W&B run (watch its folder, or pick it with --run)")
        target = self.watcher.wandb_target()
        if target is None:
            return (f"--notify wandb: {self.watcher.path} is not a W&B run; alerts are not sent "
                    "to W&B")
        if target.offline:
            return (f"--notify wandb: {target.folder.name} is an offline W&B run; alerts are not "
                    "sent to W&B")
        if not _wandb_credentials():
            return ("--notify wandb: no W&B credentials (WANDB_API_KEY or `wandb login`); "
                    "alerts are not sent to W&B")
        return None

    def _join(self, target: WandbTarget) -> Any:
        import wandb

        settings = wandb.Settings(mode="shared", x_primary=False, x_label="grpo-doctor",
                                  x_update_finish_state=False, silent=True)
        return wandb.init(entity=target.entity or None, project=target.project or None,
                          id=target.run_id, settings=settings)

    def __call__(self, alert: Alert) -> str | None:
        if self.disabled is not None:
            return None
        why = self.problem()
        if why is not None:
            self.disabled = why
            return why
        target = self.watcher.wandb_target()
        assert target is not None
        try:
            import wandb

            if self.run is None:
                self.run = self._join(target)
            levels: Any = wandb.AlertLevel  # type: ignore[attr-defined]
            level = (levels.ERROR if alert.severity is Status.CRITICAL else levels.WARN
                     if alert.severity is Status.WARNING else levels.INFO)
            what = "cleared" if alert.cleared else alert.severity.value
            self.run.alert(title=f"grpo-doctor: {alert.mode} ({what})",
                           text=alert.line(), level=level)
        except Exception as exc:  # any failure of a notifier must not stop the watch
            self.disabled = f"--notify wandb: failed ({type(exc).__name__}: {exc}); not retried"
            return self.disabled
        return None

    def close(self) -> None:
        if self.run is not None:
            with contextlib.suppress(Exception):
                self.run.finish()
            self.run = None


def notifiers(specs: Sequence[str], watcher: Watcher | WatchAll
              ) -> list[Callable[[Alert], str | None]]:
    """``--notify`` values: ``wandb`` or ``cmd:COMMAND``."""
    out: list[Callable[[Alert], str | None]] = []
    for spec in specs:
        if spec == "wandb":
            out.append(WandbNotifier(watcher))
        elif spec.startswith("cmd:"):
            out.append(CommandNotifier(spec[len("cmd:"):]))
        else:
            raise ConfigError(f"--notify must be 'wandb' or 'cmd:COMMAND', got {spec!r}")
    return out


# --- the watch loop (what ``grpo-doctor watch`` runs) -------------------------------------------

_EXIT_RANK = {"critical": 2, "warning": 1}


def status_dict(watcher: Watcher) -> dict[str, Any]:
    """The last status as a JSON object (``--format json``)."""
    run = watcher.run
    return {
        "event": "status", "status": watcher.status if run is not None else "no data",
        "run": run.name if run is not None else None, "source": str(watcher.path),
        "step": run.last_step if run is not None else None,
        "n_steps": run.n_steps if run is not None else 0, "polls": watcher.polls,
        "findings": [{"mode": c.mode, "status": c.status.value,
                      "first_alert_step": c.first_alert_step, "onset_step": c.onset_step}
                     for c in _by_first_alert(watcher.checks)],
    }


def status_line(watcher: Watcher, *, named: bool = False) -> str:
    """The last status in one line (``named``: starting with the run's name)."""
    run = watcher.run
    if run is None:
        return f"status: no data yet from {terminal(watcher.path)} ({watcher.polls} poll(s))"
    found = [f"{c.mode} {c.status.value} (first alert at step {fmt(c.first_alert_step)})"
             for c in _by_first_alert(watcher.checks)]
    what = "; ".join(found) if found else "no failure mode found"
    who = f"{terminal(run.name)}: " if named else ""
    return (f"status: {who}{watcher.status} at step {fmt(run.last_step)} ({fmt(run.n_steps)} "
            f"steps, {watcher.polls} poll(s)): {what}")


def _members(watcher: Watcher | WatchAll) -> list[Watcher]:
    return watcher.members() if isinstance(watcher, WatchAll) else [watcher]


def _several(watcher: Watcher | WatchAll) -> bool:
    return isinstance(watcher, WatchAll) and watcher.several


def _panel(watcher: Watcher, interval: float) -> Any:
    """The live status panel on a terminal."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    run = watcher.run
    title = Text(f"grpo-doctor watch · {terminal(run.name if run else watcher.path)}")
    if run is None:
        what = "waiting for data in" if watcher.polls else "reading"
        return Panel(Text(f"{what} {terminal(watcher.path)} · poll {watcher.polls} · every "
                          f"{interval:g} s · Ctrl-C to stop"), title=title, title_align="left")
    head = Text(f"{terminal(watcher.format)} · step {fmt(run.last_step)} · "
                f"{fmt(run.n_steps)} steps · poll {watcher.polls} "
                f"({watcher.last_poll_seconds:.2f} s) · every {interval:g} s · Ctrl-C to stop")
    fired = [c for c in watcher.checks if c.fired]
    ok = sum(c.status is Status.OK for c in watcher.checks)
    skipped = sum(c.status is Status.SKIPPED for c in watcher.checks)
    if not fired:
        body: Any = Text(f"no failure mode found · {ok} checks ok, {skipped} skipped",
                         style="green")
    else:
        body = Table(box=None, pad_edge=False, expand=True)
        for name in ("mode", "status", "first alert", "onset", "summary"):
            body.add_column(name, no_wrap=name != "summary", overflow="ellipsis")
        for c in sorted(fired, key=lambda c: -c.status.rank):
            style = "bold red" if c.status is Status.CRITICAL else "yellow"
            body.add_row(Text(c.mode), Text(c.status.value, style=style),
                         Text(fmt(c.first_alert_step)), Text(fmt(c.onset_step)),
                         Text(terminal(c.summary)))
    border = {"critical": "red", "warning": "yellow"}.get(watcher.status, "green")
    return Panel(Group(head, body), title=title, title_align="left", border_style=border)


def _fleet_panel(watcher: WatchAll, interval: float) -> Any:
    """The live panel of a folder of runs: one row per run."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    members = watcher.members()
    head = Text(f"{len(members)} run(s) · poll {watcher.polls} "
                f"({watcher.last_poll_seconds:.2f} s) · every {interval:g} s · Ctrl-C to stop")
    table = Table(box=None, pad_edge=False, expand=True)
    for name in ("run", "status", "step", "findings (first alert)"):
        table.add_column(name, no_wrap=name != "findings (first alert)", overflow="ellipsis")
    worst = "healthy"
    for w in members:
        run = w.run
        if run is None:
            table.add_row(Text(terminal(w.path)), Text("no data", style="dim"), "–", "")
            continue
        status = w.status
        if RUN_SEVERITY.get(status, 0) > RUN_SEVERITY.get(worst, 0):
            worst = status
        found = ", ".join(f"{c.mode}@{fmt(c.first_alert_step)}" for c in w.checks if c.fired)
        style = {"critical": "bold red", "warning": "yellow"}.get(status, "green")
        table.add_row(Text(terminal(run.name)), Text(status, style=style), fmt(run.last_step),
                      Text(found or "–"))
    border = {"critical": "red", "warning": "yellow"}.get(worst, "green")
    return Panel(Group(head, table), title=Text(f"grpo-doctor watch · {terminal(watcher.path)}"),
                 title_align="left", border_style=border)


def _live_panel(watcher: Watcher | WatchAll, interval: float) -> Any:
    if _several(watcher):
        assert isinstance(watcher, WatchAll)
        return _fleet_panel(watcher, interval)
    members = _members(watcher)
    if members:
        return _panel(members[0], interval)
    from rich.panel import Panel
    from rich.text import Text

    what = "waiting for data in" if watcher.polls else "reading"
    return Panel(Text(f"{what} {terminal(watcher.path)} · poll {watcher.polls} · every "
                      f"{interval:g} s · Ctrl-C to stop"),
                 title=Text(f"grpo-doctor watch · {terminal(watcher.path)}"), title_align="left")


def run_watch(watcher: Watcher | WatchAll, *, interval: float = 10.0,
              exit_on: str | None = None, notify: Sequence[str] = (), output: str = "terminal",
              once: bool = False, max_polls: int | None = None, live: bool | None = None,
              out: Any = None, err: Any = None,
              sleep: Callable[[float], None] | None = None) -> int:
    """Poll until stopped; print alerts (and cleared findings); return the exit code (see
    ``grpo-doctor watch``). ``watcher`` follows one run, or (``WatchAll``) every run under a
    path: alerts then name their run, and the last status is one line per run.

    1 as soon as a finding at or above ``exit_on`` appears; 0 on Ctrl-C, after ``once`` or
    ``max_polls``. A live panel is shown when ``output`` is terminal and ``out`` is a terminal.
    """
    import sys
    import time

    out = out or sys.stdout
    err = err or sys.stderr
    if exit_on is not None and exit_on not in _EXIT_RANK:
        raise ConfigError(f"--exit-on must be critical or warning, got {exit_on!r}")
    if output not in ("terminal", "json"):
        raise ConfigError(f"--format must be terminal or json, got {output!r}")
    senders = notifiers(notify, watcher)
    wandb_senders = [s for s in senders if isinstance(s, WandbNotifier)]
    pause = sleep or time.sleep
    threshold = _EXIT_RANK.get(exit_on or "", 99)
    show_panel = (output == "terminal" and (out.isatty() if live is None else live)
                  and not once)

    def say(line: str) -> None:
        err.write(f"grpo-doctor: {terminal(line)}\n")  # names from the log: one safe line
        err.flush()

    console: Any = None
    live_view: Any = None
    if show_panel:
        from rich.console import Console
        from rich.live import Live
        from rich.text import Text

        console = Console(file=out)
        live_view = Live(_live_panel(watcher, interval), console=console, refresh_per_second=4,
                         transient=True)

    def emit(alert: Alert) -> None:
        if output == "json":
            out.write(json_dumps(alert.to_dict(), default=str) + "\n")
            out.flush()
        else:
            line = (f"{terminal(alert.run)}: {alert.line()}" if _several(watcher)
                    else alert.line())
            if console is not None:
                style = {Status.CRITICAL: "bold red", Status.WARNING: "yellow"}.get(
                    alert.severity, "green")
                console.print(Text(line, style=style), highlight=False, soft_wrap=True)
            else:
                out.write(line + "\n")
                out.flush()
        for send in senders:
            warning = send(alert)
            if warning:
                say(f"warning: {warning}")

    def finish(code: int) -> int:
        if live_view is not None:
            live_view.stop()
        for send in wandb_senders:
            send.close()
        members = _members(watcher)
        if not members:
            if output == "json":
                out.write(json_dumps({"event": "status", "status": "no data", "run": None,
                                      "source": str(watcher.path), "step": None,
                                      "n_steps": 0, "polls": watcher.polls, "findings": []})
                          + "\n")
            else:
                out.write(f"status: no data yet from {terminal(watcher.path)} "
                          f"({watcher.polls} poll(s))\n")
        for member in members:
            if output == "json":
                out.write(json_dumps(status_dict(member), default=str) + "\n")
            else:
                out.write(status_line(member, named=_several(watcher)) + "\n")
        out.flush()
        return code

    if not once and not show_panel and output == "terminal":
        say(f"watching {watcher.path} every {interval:g} s (Ctrl-C to stop)")
    if live_view is not None:
        live_view.start()
    stop_on_term = _interrupt_on_sigterm()
    checked_wandb = False
    waiting_said = False
    problems_said = 0
    try:
        while True:
            alerts = watcher.poll(final=once)
            has_data = any(m.run is not None for m in _members(watcher))
            if not has_data and not waiting_said and not once:
                say(f"waiting for data in {watcher.path}")
                waiting_said = True
            problems = watcher.problems if isinstance(watcher, WatchAll) else []
            for problem in problems[problems_said:]:
                say(f"warning: left out: {problem}")
            problems_said = len(problems)
            if has_data and not checked_wandb:
                checked_wandb = True
                for send in wandb_senders:
                    problem = send.problem()
                    if problem:
                        send.disabled = problem
                        say(f"warning: {problem}")
            for alert in alerts:
                emit(alert)
            if live_view is not None:
                live_view.update(_live_panel(watcher, interval))
            if any(a.severity.rank >= threshold for a in alerts):
                return finish(1)
            if once or (max_polls is not None and watcher.polls >= max_polls):
                return finish(0)
            pause(interval)
    except KeyboardInterrupt:
        return finish(0)
    finally:
        stop_on_term()


def _interrupt_on_sigterm() -> Callable[[], None]:
    """Let SIGTERM (a job script stopping the watch) end it as Ctrl-C does; returns the undo."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except (ValueError, OSError):  # pragma: no cover - platforms without SIGTERM handlers
        return lambda: None

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore
