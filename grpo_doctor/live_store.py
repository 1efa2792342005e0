"""The Run of a growing log, kept up to date as new rows arrive (``watch``, the trainer callback).

``LiveStore`` holds the Run a watch checks. After a rebuild by the format's importer it keeps
the Run's canonical columns in preallocated buffers; a poll that only brings rows after the
last step (or completing it) with known columns is transformed and written there, O(new rows x
metrics), and the frame handed to the rules is a zero-copy view, with the finite series the
rules read kept up to date alongside (so ``Run.finite_series`` is a cache hit). Anything else
(a new column, a restart, a new event file, a changed config, a mapping that depends on how
often columns are logged) is a rebuild from the bytes read so far: O(steps x metrics), once per
such change.

``Rows`` is what an importer's incremental reader hands over (``importers.Incremental``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from grpo_doctor.metrics import ColumnMap, map_columns
from grpo_doctor.store import Run


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
        self.column_map = (column_map if isinstance(column_map, ColumnMap)
                           else dict(column_map or {}))
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

