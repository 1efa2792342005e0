"""The metric store: one run as a step-indexed frame of canonical metrics.

Every importer ends in ``build_run``, so the rules of the store live in one place: steps sorted,
duplicates (a resumed run) keep the last value logged and are counted, restarts (the step going
backwards) are counted, cells that are not numbers become gaps, and an explicitly logged NaN is
kept as evidence (``Run.nan_steps``) rather than confused with a gap. Nothing is forward-filled.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from grpo_doctor.endings import Ending
from grpo_doctor.errors import ConfigError, FormatError, InputError
from grpo_doctor.escape import visible
from grpo_doctor.lazy import numpy as np
from grpo_doctor.lazy import pandas as pd
from grpo_doctor.metrics import find_step_column, map_columns
from grpo_doctor.text import agree, plural

_NAN_WORDS = {"nan", "-nan", "+nan", "nan(ind)", "-nan(ind)"}
_INF_WORDS = {"inf": math.inf, "+inf": math.inf, "infinity": math.inf, "+infinity": math.inf,
              "-inf": -math.inf, "-infinity": -math.inf}
#: Text that stands for "nothing logged here" (no note when a column holds it).
_GAP_WORDS = {"", "-", "–", "—", "no log", "none", "null", "na", "n/a", "nat", "<na>"}
_MAX_TEXT_NOTES = 5  # columns named in "not numbers" notes before they are counted
#: The note an importer leaves naming keys whose values are numbers written as text (a mean
#: and a std as "52.5|37.8"): left out, and said where a refusal or a --map names them.
TEXT_VALUES_NOTE = "left out, numbers written as text, not one number each: "
#: A steps x metrics table past this many cells is refused when it would hold fewer than
#: 1/SPARSE_RATIO of them as values: a few megabytes of records, each at a new step under a new
#: name, would otherwise ask for gigabytes (a dense log of 1M steps x 30 metrics is still read).
MAX_SPARSE_CELLS = 1 << 25
SPARSE_RATIO = 64


#: The config key a log's saved checkpoints (the steps of its ``checkpoint-N``) are kept under:
#: what a roll-back can go back to.
SAVED_CHECKPOINTS = "saved_checkpoints"
#: The prefix of the values grpo-doctor's TRL callback logs into the run's own log.
DOCTOR_PREFIX = "doctor/"
#: Config keys an importer sets from a log's own words: the parameters the optimizer trains
#: (Transformers' "Number of trainable parameters = N") and the model's size in parameters
#: (from its name: "Qwen2.5-7B-Instruct"); together they tell an adapter from a full fine-tune.
TRAINABLE_PARAMS = "trainable_params"
MODEL_PARAMS = "model_params"
#: The config key a console log sets when a supervised fine-tuning printed before the RL run
#: (its loss lines, left out): the policy had its SFT warm-up.
SFT_BEFORE = "sft_before"
#: The config keys an importer derives from a log's words, not settings the run was given.
DERIVED_KEYS = frozenset({SAVED_CHECKPOINTS, TRAINABLE_PARAMS, MODEL_PARAMS, SFT_BEFORE})


@dataclass
class Run:
    """One training run's metrics, keyed by step.

    ``frame`` has an int64 index named ``step`` (sorted, unique) and one float64 column per
    canonical metric present (``entropy``, ``kl``, ``reward_component/format`` ...), followed by
    the columns that mapped to nothing, under their own names. ``mapping`` says which source
    column each canonical metric came from.
    """

    name: str
    source: str
    format: str
    frame: pd.DataFrame
    config: dict[str, Any] = field(default_factory=dict)
    mapping: dict[str, str] = field(default_factory=dict)
    conversions: dict[str, str] = field(default_factory=dict)
    proxies: dict[str, str] = field(default_factory=dict)
    unmapped: list[str] = field(default_factory=list)
    nan_steps: dict[str, np.ndarray] = field(default_factory=dict)
    step_source: str = "step"
    duplicate_steps: int = 0
    restarts: int = 0
    notes: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    # Reward components' roles the user gave (short name -> correctness | format | cheat |
    # other: --reward-role, [rewards]); the rules infer the others (rules.signals).
    reward_roles: dict[str, str] = field(default_factory=dict)
    # Top-level keys of ``config`` read from beside the log (a training config saved beside
    # it, a notebook's code), not from the log itself, with where ("training_args.bin beside
    # the log"): the diagnosis checks them against what the log recorded, and a config given
    # for the run wins over them (run_settings.with_run_settings).
    config_beside: dict[str, str] = field(default_factory=dict)
    # Logs of this run found but not read (a copy no richer than the one read, an earlier
    # checkpoint): (path, why), for ``audit -v``.
    passed_over: list[tuple[str, str]] = field(default_factory=list)
    # How the process ended after its last logged step, when the log says (a traceback in its
    # console output): a run that stopped on an error, not one that finished.
    ending: Ending | None = None
    # The first logged step of each launch after the first, for launches of the run resumed
    # from a checkpoint and read as one (``resumed.joined``): what broke there may be what
    # changed at the resume.
    resumed_at: tuple[int, ...] = ()
    # Settings a resume changed: the checkpoints' saved settings (``training_args.bin``)
    # before and after it differ: key -> (before, after, the first checkpoint after it).
    changed_at_resume: dict[str, tuple[Any, Any, int]] = field(default_factory=dict)
    # metric -> (steps, values) with gaps and non-finite values dropped; filled on first use
    # and sliced (not recomputed) by ``truncated``, which replaying first alerts calls often.
    _finite: dict[str, tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, repr=False, compare=False)
    # Derived series (binned views) of this exact Run; never carried into a truncated one.
    _derived: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, repr=False, compare=False)

    def __repr__(self) -> str:
        # Short: the frame, notes and config are a notebook cell's kilobytes, not a summary.
        return (f"Run(name={self.name!r}, format={self.format!r}, steps={self.n_steps} "
                f"({self.first_step}..{self.last_step}), metrics={len(self.mapping)})")

    def finite_series(self, metric: str) -> tuple[np.ndarray, np.ndarray]:
        """(steps, values) of ``metric`` where it was logged as a finite number."""
        cached = self._finite.get(metric)
        if cached is None:
            if metric not in self.frame.columns:
                cached = (np.zeros(0, dtype=np.int64), np.zeros(0))
            else:
                values = self.frame[metric].to_numpy(dtype=np.float64)
                keep = np.isfinite(values)
                cached = (self.frame.index.to_numpy()[keep], values[keep])
            self._finite[metric] = cached
        return cached

    @property
    def steps(self) -> np.ndarray:
        return self.frame.index.to_numpy()

    @property
    def n_steps(self) -> int:
        return len(self.frame)

    @property
    def first_step(self) -> int | None:
        return int(self.frame.index[0]) if len(self.frame) else None

    @property
    def last_step(self) -> int | None:
        return int(self.frame.index[-1]) if len(self.frame) else None

    def has(self, metric: str) -> bool:
        """Whether ``metric`` was logged at all (a logged NaN counts: it is evidence)."""
        if metric not in self.frame.columns:
            return False
        return self.holds_value(metric) or metric in self.nan_steps

    def holds_value(self, metric: str) -> bool:
        """Whether ``metric`` holds a value on some step (an infinity counts, a NaN does not).
        The cached finite series answers most calls: the rules ask this of every column, and
        a pandas ``notna`` per call had been a third of an audit's time."""
        if len(self.finite_series(metric)[0]):
            return True
        return metric in self.frame.columns and bool(self.frame[metric].notna().any())

    def truncated(self, last_step: int) -> Run:
        """The run as it was when ``last_step`` had just been logged (for first-alert steps)."""
        end = int(np.searchsorted(self.frame.index.to_numpy(), last_step, side="right"))
        frame = self.frame.iloc[:end]
        nan_steps = {k: v[v <= last_step] for k, v in self.nan_steps.items()}
        finite = {}
        for metric, (steps, values) in self._finite.items():
            cut = int(np.searchsorted(steps, last_step, side="right"))
            finite[metric] = (steps[:cut], values[:cut])
        return Run(
            name=self.name, source=self.source, format=self.format, frame=frame,
            config=self.config, mapping=self.mapping, conversions=self.conversions,
            proxies=self.proxies, unmapped=self.unmapped, nan_steps=nan_steps,
            step_source=self.step_source, duplicate_steps=self.duplicate_steps,
            restarts=self.restarts, notes=self.notes, summary=self.summary,
            reward_roles=self.reward_roles, _finite=finite,
            # The ending was printed after the last step: a run cut before it had not ended.
            ending=self.ending if end >= len(self.frame) else None,
        )

    def without_steps(self, steps: Iterable[int]) -> Run:
        """The run with the rows of ``steps`` left out (steps a failed scorer logged: what the
        rules judge of the policy is the rest)."""
        drop = np.asarray(sorted(set(int(s) for s in steps)), dtype=float)
        keep = ~np.isin(self.frame.index.to_numpy(dtype=float), drop)
        finite = {}
        for metric, (st, v) in self._finite.items():
            kept = ~np.isin(st, drop)
            finite[metric] = (st[kept], v[kept])
        nan_steps = {k: v[~np.isin(v, drop)] for k, v in self.nan_steps.items()}
        return replace(self, frame=self.frame.iloc[keep], nan_steps=nan_steps, _finite=finite,
                       _derived={})


def column_floats(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Numeric values of a column and a mask of cells that explicitly said NaN.

    Text that is not a number ("No Log", "", "-") becomes a gap; "nan" is kept as NaN evidence
    and "inf" as inf.
    """
    if pd.api.types.is_bool_dtype(values.dtype):
        return values.to_numpy(dtype=np.float64), np.zeros(len(values), dtype=bool)
    if pd.api.types.is_numeric_dtype(values.dtype):
        arr = values.to_numpy(dtype=np.float64, na_value=np.nan)
        # A numeric column cannot tell a logged NaN from a gap; importers that can tell pass
        # an explicit mask instead.
        return arr, np.zeros(len(arr), dtype=bool)
    text = values.astype("string").str.strip()
    lower = text.str.lower()
    nums = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    explicit_nan = lower.isin(_NAN_WORDS).fillna(False).to_numpy(dtype=bool)
    for word, val in _INF_WORDS.items():
        hit = (lower == word).fillna(False).to_numpy(dtype=bool)
        if hit.any():
            nums[hit] = val
    nums[explicit_nan] = np.nan
    return nums, explicit_nan


def check_table_size(source: str, rows: int, columns: int, values: int) -> None:
    """Refuse to tabulate a log so sparse that its steps x metrics table would dwarf the file.

    Importers call this before they allocate the wide table (see ``MAX_SPARSE_CELLS``)."""
    cells = rows * columns
    if cells > MAX_SPARSE_CELLS and cells > SPARSE_RATIO * max(values, 1):
        where = f"{source}: " if source else ""
        raise FormatError(
            f"{where}{rows:,} steps x {columns:,} metrics holding {values:,} values is too "
            "sparse to tabulate (not a training log?)"
        )


def _text_cells(values: pd.Series, nums: np.ndarray, nan: np.ndarray) -> tuple[int, str]:
    """How many cells of a column hold text that is neither a number nor a gap word, and one."""
    if pd.api.types.is_numeric_dtype(values.dtype) or pd.api.types.is_bool_dtype(values.dtype):
        return 0, ""
    text = values.astype("string").str.strip()
    odd = (np.isnan(nums) & ~nan & text.notna().to_numpy(dtype=bool)
           & ~text.str.lower().isin(_GAP_WORDS).fillna(True).to_numpy(dtype=bool))
    if not odd.any():
        return 0, ""
    return int(odd.sum()), str(text[odd].iloc[0])


def _shown(example: str) -> str:
    """A cell's text as a note quotes it: at most 40 characters."""
    return example if len(example) <= 40 else example[:37] + "..."


def _text_notes(found: list[tuple[str, int, str]]) -> list[str]:
    """Notes for numeric columns holding text cells (read as gaps): corruption, not a gap."""
    notes = []
    for col, count, example in found[:_MAX_TEXT_NOTES]:
        notes.append(f"{col}: {plural(count, 'cell')} that "
                     f"{agree(count, 'is not a number was', 'are not numbers were')} read as gaps "
                     f"(e.g. {_shown(example)!r})")
    if len(found) > _MAX_TEXT_NOTES:
        notes.append(f"{plural(len(found) - _MAX_TEXT_NOTES, 'more column')} "
                     f"{agree(len(found) - _MAX_TEXT_NOTES, 'holds', 'hold')} cells that are not "
                     "numbers (read as gaps)")
    return notes


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_INTEGER_TEXT = r"[+-]?\d+"


def integer_steps(values: pd.Series | np.ndarray | Sequence[Any]
                  ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Steps as exact int64, and the rows that have none, by reason.

    Integer columns are taken exactly (no float round trip, which would merge 2^62+1 and
    2^62+2); a float or text step must be a whole number within the 64-bit range. Returns
    (steps, masks): ``steps`` holds 0 where a row has no valid step, and ``masks`` maps
    ``missing`` / ``fractional`` / ``out_of_range`` to the rows dropped for that reason.
    """
    series = values if isinstance(values, pd.Series) else pd.Series(
        values if isinstance(values, np.ndarray) else list(values))
    n = len(series)
    steps = np.zeros(n, dtype=np.int64)
    missing = np.zeros(n, dtype=bool)
    fractional = np.zeros(n, dtype=bool)
    out_of_range = np.zeros(n, dtype=bool)
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        steps = series.to_numpy(dtype=np.int64)
    elif pd.api.types.is_integer_dtype(dtype):
        # Nullable integers (a parquet column with nulls) too: never through float64.
        missing = series.isna().to_numpy(dtype=bool)
        numpy_dtype: Any = getattr(dtype, "numpy_dtype", dtype)
        arr = series.to_numpy(dtype=numpy_dtype, na_value=0) if missing.any() \
            else series.to_numpy(dtype=numpy_dtype)
        if arr.dtype.kind == "u":
            out_of_range = arr > _INT64_MAX
            steps = np.where(out_of_range, 0, arr).astype(np.int64)
        else:
            steps = arr.astype(np.int64)
    elif dtype.kind == "O" and n and all(type(v) is int for v in series.to_numpy()):
        try:  # Python ints (a SQLite INTEGER column, a JSON log): exact, fast
            steps = np.array(series.to_list(), dtype=np.int64)
        except OverflowError:  # one past int64: each read as text, below
            return integer_steps(series.astype(str))
    else:
        exact: dict[int, int] = {}
        numbers: pd.Series = series
        if not pd.api.types.is_numeric_dtype(dtype):
            # Whole numbers written as text (or Python ints beyond int64) are read exactly.
            numbers = series.astype("string").str.strip()
            whole = numbers.str.fullmatch(_INTEGER_TEXT).fillna(False).to_numpy(dtype=bool)
            for i in np.flatnonzero(whole):
                digits = numbers.iloc[i]
                # Past 20 digits it is out of range anyway (and int() refuses 4,300 digits).
                exact[int(i)] = int(digits) if len(digits) <= 21 else 1 << 64
            numbers = numbers.mask(whole)  # read exactly above; no float conversion needed
        floats = pd.to_numeric(numbers, errors="coerce").to_numpy(dtype=np.float64,
                                                                    na_value=np.nan)
        with np.errstate(invalid="ignore"):
            missing = np.isnan(floats)
            infinite = np.isinf(floats)  # a number too long for a float: beyond any range
            fractional = ~missing & ~infinite & (floats != np.floor(floats))
            out_of_range = infinite | (~missing & ~fractional & ((floats >= 2.0 ** 63)
                                                                 | (floats < -2.0 ** 63)))
        good = ~(missing | fractional | out_of_range)
        steps[good] = floats[good].astype(np.int64)
        for row, value in exact.items():
            missing[row] = fractional[row] = False
            out_of_range[row] = not (_INT64_MIN <= value <= _INT64_MAX)
            steps[row] = value if not out_of_range[row] else 0
    return steps, {"missing": missing, "fractional": fractional, "out_of_range": out_of_range}


def step_array(values: Sequence[Any]) -> np.ndarray:
    """Steps as an importer gathered them (Python ints, floats, text, None), as an array that
    keeps each exactly for :func:`integer_steps`: int64 when every one is an int64 integer,
    else an object array (never float64, which merges 2^62+1 and 2^62+2)."""
    if all(type(v) is int for v in values):
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            pass
    return np.array(values, dtype=object) if len(values) else np.zeros(0, dtype=np.int64)


def _example(values: Any, mask: np.ndarray) -> str:
    """One of the dropped step values, as logged (for the note)."""
    try:
        value = values.iloc[int(np.flatnonzero(mask)[0])] if isinstance(values, pd.Series) \
            else values[int(np.flatnonzero(mask)[0])]
    except (IndexError, TypeError, KeyError):
        return ""
    text = str(value)
    return f" (e.g. {text if len(text) <= 40 else text[:37] + '...'})"


def step_notes(values: Any, masks: Mapping[str, np.ndarray]) -> list[str]:
    """What dropping rows without a valid step did, truthfully (never called repeats)."""
    notes = []
    if masks["missing"].any():
        notes.append(f"{plural(int(masks['missing'].sum()), 'row')} without a step "
                     f"{agree(int(masks['missing'].sum()), 'was', 'were')} dropped")
    if masks["fractional"].any():
        notes.append(f"{plural(int(masks['fractional'].sum()), 'row')} with a step that is not a "
                     f"whole number{_example(values, masks['fractional'])} "
                     f"{agree(int(masks['fractional'].sum()), 'was', 'were')} dropped")
    if masks["out_of_range"].any():
        notes.append(f"{plural(int(masks['out_of_range'].sum()), 'row')} with a step beyond the "
                     f"64-bit integer range{_example(values, masks['out_of_range'])} "
                     f"{agree(int(masks['out_of_range'].sum()), 'was', 'were')} dropped")
    return notes


def _copy_quality(values: np.ndarray) -> tuple[bool, int]:
    """(varies, finite values) of one copy of a column."""
    finite = values[np.isfinite(values)]
    return (bool(len(finite)) and bool(finite.min() != finite.max()), int(len(finite)))


def resolve_duplicates(raw: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """One column per name: of copies under one name, the one with the signal is kept (one
    that varies over one that is constant, then the one with more finite values, then the
    last), and a note says which copy was used and why."""
    names = [str(c) for c in raw.columns]
    if len(set(names)) == len(names):
        return raw, []
    positions: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        positions.setdefault(name, []).append(i)
    keep: list[int] = []
    notes: list[str] = []
    for name, where in positions.items():
        if len(where) == 1:
            keep.append(where[0])
            continue
        values = [column_floats(raw.iloc[:, i])[0] for i in where]
        quality = [_copy_quality(v) for v in values]
        best = max(range(len(where)), key=lambda k: (quality[k], k))
        keep.append(where[best])
        others = [k for k in range(len(where)) if k != best]
        if all(np.array_equal(values[best], values[k], equal_nan=True) for k in others):
            why = "the copies are identical"
        elif quality[best][0] and not all(quality[k][0] for k in others):
            why = "it varies; the other copy is constant" if len(others) == 1 else \
                "it varies; other copies are constant"
        elif any(quality[best][1] > quality[k][1] for k in others):
            why = f"it has the most values ({quality[best][1]:,})"
        else:
            why = "the copies differ; the last one was kept"
        notes.append(f"the column {name!r} appears {len(where)} times: the copy in column "
                     f"{where[best] + 1} of the header was used ({why})")
    keep.sort()
    out = raw.iloc[:, keep].copy(deep=False)
    out.columns = [names[i] for i in keep]
    return out, notes


def _overwritten_rows(frame: pd.DataFrame) -> int:
    """Rows of a step logged before that log one of its metrics again (a resumed run writing
    over old steps). Rows that share a step with other metrics only (the Trainer's eval row at
    the step of its training row) are merged whole, and are not counted: nothing was dropped."""
    shared = frame[frame.index.duplicated(keep=False)]
    by_step = shared.groupby(level=0, sort=False)
    again = (by_step.count() > 1).any(axis=1)
    rows = by_step.size()
    return int((rows[again[again].index] - 1).sum())


def _order_note(n_dup: int, n_restarts: int | None) -> str | None:
    """What sorting and de-duplicating the steps did, for the report."""
    went_back = (f"the step went backwards {plural(n_restarts, 'time')} (a resumed run?)"
                 if n_restarts else "")
    if n_dup:
        what = (f"{plural(n_dup, 'row')} {agree(n_dup, 'repeats', 'repeat')} a step logged "
                "before: the last value logged was kept")
        return f"{went_back}; {what}" if went_back else what
    if went_back:
        return f"{went_back}: rows were sorted by step"
    return None


def _held_rows(frame: pd.DataFrame, mapped: list[str],
               nan_steps: dict[str, np.ndarray]) -> np.ndarray:
    """Per row: whether it holds a metric the checks read, or a NaN of one kept as
    evidence."""
    held = np.array(frame[mapped].notna().any(axis=1), dtype=bool)
    for col in mapped:
        if col in nan_steps:
            held |= np.isin(frame.index.to_numpy(), nan_steps[col])
    return held


def _without_edge_extras(frame: pd.DataFrame, mapped: list[str],
                         nan_steps: dict[str, np.ndarray]) -> pd.DataFrame:
    """``frame`` without its first and last rows while they hold other columns only, none of
    the metrics the checks read: the profiling timings a tracker records at step 0, before
    the first training step is counted, and the end-of-training summary one step past the
    last (TRL through wandb, MLflow, Trackio). Counted as logged steps they stretch the run to
    a step it never trained. A row with no number at all (a table's 'No Log') stays."""
    if not mapped or not len(frame):
        return frame
    held = _held_rows(frame, mapped, nan_steps)
    if not held.any():
        return frame
    extra = ~held & np.array(frame[frame.columns.difference(mapped)].notna().any(axis=1),
                             dtype=bool)
    first, last = 0, len(frame)
    while extra[first]:
        first += 1
    while extra[last - 1]:
        last -= 1
    return frame.iloc[first:last] if first or last < len(frame) else frame


#: The prefix of TRL's profiling timings ("profiling/Time taken: GRPOTrainer._calculate_rewards"),
#: which a tracker records on every step, whatever ``logging_steps`` is.
_TIMING_PREFIX = "profiling/"


def _without_timing_rows(frame: pd.DataFrame, mapped: list[str],
                         nan_steps: dict[str, np.ndarray]) -> pd.DataFrame:
    """``frame`` without the rows that hold profiling timings only: with ``logging_steps`` 10
    a Trackio store had 191 rows of timings and 20 of training metrics, read as "191 logged"
    (trial 57). Rows the checks read, or with a NaN kept as evidence, stay."""
    timing = [c for c in frame.columns if str(c).startswith(_TIMING_PREFIX)]
    if not timing or not mapped or not len(frame):
        return frame
    held = _held_rows(frame, mapped, nan_steps)
    others = frame.columns.difference(timing)
    other = np.array(frame[others].notna().any(axis=1), dtype=bool) if len(others) else (
        np.zeros(len(frame), dtype=bool))
    only_timing = ~held & ~other & np.array(frame[timing].notna().any(axis=1), dtype=bool)
    if not held.any() or not only_timing.any():
        return frame
    return frame.loc[~only_timing]


def build_run(
    raw: pd.DataFrame,
    *,
    name: str,
    source: str,
    format: str,
    step_column: str | None = None,
    steps: Sequence[int] | np.ndarray | None = None,
    config: Mapping[str, Any] | None = None,
    column_map: Mapping[str, str] | None = None,
    explicit_nan: Mapping[str, np.ndarray] | None = None,
    notes: Sequence[str] = (),
    restarts: int | None = None,
    summary: Mapping[str, Any] | None = None,
) -> Run:
    """Turn a raw frame (one row per logged record, raw column names) into a ``Run``.

    The step comes from ``steps`` if given, else ``step_column``, else a detected step column,
    else row order. ``explicit_nan`` marks cells (per raw column, aligned with the rows) where a
    NaN was logged, for importers whose parsing can tell a logged NaN from a gap.
    """
    raw = raw.copy(deep=False)
    raw.columns = [str(c) for c in raw.columns]
    # The TRL callback's own doctor/* values, logged beside the run's: its verdicts, not the
    # run's metrics (read back, they had added a dozen columns to every report, trial 59).
    own = [c for c in raw.columns if c.startswith(DOCTOR_PREFIX)]
    if own:
        raw = raw.drop(columns=own)
    raw, duplicate_notes = resolve_duplicates(raw)
    note_list = list(notes) + duplicate_notes

    if steps is not None:
        step_values: Any = steps
        step_source = "given"
    else:
        col = step_column if step_column is not None else find_step_column(raw.columns)
        if step_column is not None and step_column not in raw.columns:
            raise ConfigError(f"step column {step_column!r} not found in {source}")
        if col is not None:
            step_values = raw[col].reset_index(drop=True)
            raw = raw.drop(columns=[col])
            step_source = col
        else:
            step_values = np.arange(len(raw), dtype=np.int64)
            step_source = "row order"
            if len(raw):
                note_list.append("no step column found: steps are row numbers")

    step_int, step_masks = integer_steps(step_values)
    bad_step = step_masks["missing"] | step_masks["fractional"] | step_masks["out_of_range"]
    if bad_step.any():
        note_list.extend(step_notes(step_values, step_masks))
        raw = raw.loc[~bad_step]
        step_int = step_int[~bad_step]
        if explicit_nan:
            explicit_nan = {k: np.asarray(v)[~bad_step] for k, v in explicit_nan.items()}

    # Restarts: the step went backwards in file order (a resumed run writing over old steps).
    n_restarts = int((np.diff(step_int) < 0).sum()) if restarts is None else restarts
    # Sorting and counting equal neighbours: numpy 2.4's hash-based unique is ~100x slower.
    n_dup = int((np.diff(np.sort(step_int, kind="stable")) == 0).sum()) if len(step_int) else 0
    order_note_at = len(note_list)  # said once the repeats are known to disagree (below)

    if column_map:
        # A config file's entries apply where the log has the column (see ColumnMap).
        optional: frozenset[str] = getattr(column_map, "optional", frozenset())
        column_map = {k: v for k, v in column_map.items()
                      if v in raw.columns or k not in optional}
        missing = [src for src in column_map.values() if src not in raw.columns]
        texts = [n for n in (notes or ()) if n.startswith(TEXT_VALUES_NOTE)]
        written = [m for m in missing if texts and f"{m} (" in texts[0]]
        if written:
            raise ConfigError(
                f"--map names {agree(len(written), 'a key', 'keys')} of {source} holding "
                f"numbers written as text, not one number each: {texts[0][len(TEXT_VALUES_NOTE):]}")
        if missing:
            raise ConfigError(
                f"--map names {agree(len(missing), 'a column', 'columns')} not in {source}: "
                f"{', '.join(map(repr, missing))}"
            )
    counts = {c: int(raw[c].notna().sum()) for c in raw.columns}
    cm = map_columns(raw.columns, column_map, counts)

    data: dict[str, np.ndarray] = {}
    nan_masks: dict[str, np.ndarray] = {}
    text_found: list[tuple[str, int, str]] = []
    for col in raw.columns:
        vals, nan_mask = column_floats(raw[col])
        if (~np.isnan(vals)).any() or nan_mask.any():  # a numeric column, not a text one
            count, example = _text_cells(raw[col], vals, nan_mask)
            if count:
                text_found.append((col, count, example))
        if explicit_nan and col in explicit_nan:
            nan_mask = nan_mask | np.asarray(explicit_nan[col], dtype=bool)
        data[col] = vals
        nan_masks[col] = nan_mask
    note_list.extend(_text_notes(text_found))
    # A column named like a metric the checks read, holding text only: say so, or its check
    # asks the user to log a metric that is there ("log reward_mean" beside a reward column).
    for canonical, src in cm.mapping.items():
        vals = data[src]
        if np.isnan(vals).all() and not nan_masks[src].any() and raw[src].notna().any():
            example = _shown(str(raw[src].dropna().iloc[0]).strip())
            note_list.append(f"{src} (read as {canonical}) holds no numbers (e.g. {example!r}): "
                             "it was left out")
    textual = [c for c in raw.columns if np.isnan(data[c]).all() and not nan_masks[c].any()
               and raw[c].notna().any()]
    if textual and len(textual) == len(raw.columns):
        # Every column is text: a report would call the run inconclusive, as if it were short.
        # Column names come from the file: one line, whatever they hold (a damaged
        # notebook's "metadata": {} across lines).
        names = ", ".join(visible(c) for c in textual[:4]) + (" ..." if len(textual) > 4 else "")
        raise InputError(f"{source}: no numbers in any metric column ({names} "
                         f"{agree(len(textual), 'holds', 'hold')} only text)")

    columns: dict[str, np.ndarray] = {}
    col_nan: dict[str, np.ndarray] = {}
    for canonical, src in cm.mapping.items():
        with np.errstate(all="ignore"):
            columns[canonical] = cm.transforms[canonical](data[src])
        col_nan[canonical] = nan_masks[src]
    for src in cm.unmapped:
        key = src if src not in columns else f"raw/{src}"
        columns[key] = data[src]
        col_nan[key] = nan_masks[src]

    frame = pd.DataFrame(columns, index=pd.Index(step_int, name="step"))
    nan_steps: dict[str, np.ndarray] = {}
    for key, mask in col_nan.items():
        if mask.any():
            nan_steps[key] = np.unique(step_int[mask])
    n_overwritten = 0
    if n_dup or not frame.index.is_monotonic_increasing:  # (a merged restart is already sorted)
        # Keep the last value logged for each step and metric (a resumed run overwrites).
        order = np.argsort(step_int, kind="stable")
        frame = frame.iloc[order]
        n_overwritten = _overwritten_rows(frame) if n_dup else 0
        frame = frame.groupby(level=0, sort=True).last()
        frame.index.name = "step"
        # A step whose NaN was later overwritten by a number is no longer NaN evidence.
        for key, st in list(nan_steps.items()):
            still = st[np.isnan(frame.loc[st, key].to_numpy())]
            if len(still):
                nan_steps[key] = still
            else:
                del nan_steps[key]
    frame = frame.astype(np.float64)
    frame = _without_edge_extras(frame, list(cm.mapping), nan_steps)
    frame = _without_timing_rows(frame, list(cm.mapping), nan_steps)
    note = _order_note(n_overwritten, None if restarts is not None else n_restarts)
    if note:
        note_list.insert(order_note_at, note)

    return Run(
        name=name, source=source, format=format, frame=frame, config=dict(config or {}),
        mapping=dict(cm.mapping), conversions=dict(cm.conversions), proxies=dict(cm.proxies),
        unmapped=list(cm.unmapped), nan_steps=nan_steps, step_source=step_source,
        duplicate_steps=n_dup, restarts=n_restarts, notes=note_list, summary=dict(summary or {}),
    )
