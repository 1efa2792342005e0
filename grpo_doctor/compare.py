"""Across runs (``grpo-doctor compare A B [C ...]``): what differs from the reference run.

The first run is the reference; every other run is compared with it, in three parts:

1. **Config diff**: the knobs that matter to GRPO (learning rate, KL coefficient, temperature,
   group size, ...) read under every framework's name (``knobs``) where two known values differ,
   then every config key present in every run whose values differ, then the keys only some
   runs' configs hold (null where absent). A knob missing from a config is read from the logged
   metric when there is one (its peak: the configured value of a schedule). Numbers equal to
   float32's resolution are equal.
2. **Where they part**: per canonical metric, the first step from which a run differs from the
   reference beyond what their own noise explains (``trends.divergence``): a windowed test
   that accounts for autocorrelation, never a point difference. Two seeds of one recipe from
   one checkpoint, as a rule, do not part.
3. **Findings diff**: each failure mode raised in any run, with its status, onset and first
   alert per run and what changed against the reference (appears, disappears, escalates,
   eases, onset moved, other form: the mode read from another signal, as answers cut at the
   budget against answers shortened; not compared when the check was skipped in either
   run), and each run's root cause where the diagnosis names one.

Pure data in, pure data out: the result types are in ``comparison.py``, reporters in
``reporters/compare_report.py``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from grpo_doctor import recipe
from grpo_doctor.comparison import Comparison, FindingComparison, MetricComparison, Suspect
from grpo_doctor.config import Settings
from grpo_doctor.engine import diagnose
from grpo_doctor.errors import ConfigError
from grpo_doctor.findings import Check, Diagnosis, Status
from grpo_doctor.importers._common import typed_text
from grpo_doctor.metrics import Metric
from grpo_doctor.objstore import is_store_uri
from grpo_doctor.rules import knobs
from grpo_doctor.store import DERIVED_KEYS, Run
from grpo_doctor.trends.divergence import (
    RESOLUTION,
    Parting,
    common_grid,
    default_window,
    parting,
)

#: The knobs compared under one name whatever the framework called them.
KNOBS = knobs.BY_NAME
#: Canonical metrics in report order (reward components and the rest follow by name).
_ORDER = {m.value: i for i, m in enumerate(Metric)}


# --- config ----------------------------------------------------------------------------------


knob_value = knobs.configured_value


def _same(a: Any, b: Any) -> bool:
    """Equal values; numbers within float32's resolution (TensorBoard and W&B round trips);
    text a tracker stored for a number or a flag read as one."""
    a, b = typed_text(a), typed_text(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(
            a, bool) and not isinstance(b, bool):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= RESOLUTION * max(abs(a), abs(b))
    try:
        return bool(a == b)
    except Exception:  # arrays, odd objects: compare as text
        return str(a) == str(b)


def config_diff(runs: Sequence[Run]) -> tuple[dict[str, list[Any]], dict[str, list[str | None]]]:
    """The knobs and config keys whose values differ between ``runs`` (see the module
    docstring), and for each knob where each run's value came from."""
    diff: dict[str, list[Any]] = {}
    origin: dict[str, list[str | None]] = {}
    used: list[set[str]] = [set() for _ in runs]
    for name, knob in KNOBS.items():
        found = [knob_value(run, knob) for run in runs]
        for keys, (_, where) in zip(used, found):
            if where is not None and not where.startswith("logged"):
                keys.add(where)
        values = [value for value, _ in found]
        known = [v for v in values if v is not None]
        if (len(known) >= 2 and not all(_same(known[0], v) for v in known[1:])) or (
                0 < len(known) < len(values)):
            # Set in only some runs' configs is a difference too: a beta of 1.0 one run set
            # and the other left unsaid had been dropped from the diff (h121).
            diff[name] = values
            origin[name] = [where for _, where in found]
    flat = [knobs.flatten(run.config) if run.config else {} for run in runs]
    everywhere, somewhere = [], []
    for key in sorted({k for f in flat for k in f}):
        if any(key in keys for keys in used) and key not in diff:
            continue  # a knob's own key, already compared under the knob's name
        values = [f.get(key) for f in flat]
        if all(key in f for f in flat):
            if not all(_same(values[0], v) for v in values[1:]):
                everywhere.append((key, values))
        else:
            somewhere.append((key, values))
    for key, values in everywhere + somewhere:
        diff.setdefault(key, values)
    return diff, origin


# --- metrics ---------------------------------------------------------------------------------


def _metric_order(metric: str) -> tuple[int, str]:
    return _ORDER.get(metric, len(_ORDER)), metric


def _mean_between(run: Run, metric: str, lo: int, hi: int) -> float | None:
    steps, values = run.finite_series(metric)
    keep = (steps >= lo) & (steps <= hi)
    return float(values[keep].mean()) if keep.any() else None


def compare_metric(runs: Sequence[Run], metric: str) -> MetricComparison:
    """Where each run parts from the reference (``runs[0]``) on ``metric``."""
    ref = runs[0]
    logged = tuple(bool(len(r.finite_series(metric)[0])) for r in runs)
    partings: list[Parting | None] = [None]
    shared: list[int | None] = [None]
    last_window: tuple[int, int] | None = None
    for run, has in zip(runs[1:], logged[1:]):
        if not (has and logged[0]):
            partings.append(None)
            shared.append(None)
            continue
        grid, a, b = common_grid(*ref.finite_series(metric), *run.finite_series(metric))
        partings.append(parting(grid, a, b))
        shared.append(len(grid))
        if len(grid) and last_window is None:
            w = min(len(grid), default_window(len(grid)))
            last_window = (int(round(grid[-w])), int(round(grid[-1])))
    found = [p for p in partings if p is not None]
    window = min(found, key=lambda p: p.step).window if found else last_window
    values = tuple(_mean_between(r, metric, *window) if window and has else None
                   for r, has in zip(runs, logged))
    return MetricComparison(metric, tuple(partings), logged, window, values, tuple(shared))


# --- findings --------------------------------------------------------------------------------

def _change(ref: Check | None, other: Check | None) -> str:
    if ref is None or other is None or Status.SKIPPED in (ref.status, other.status):
        return "not_compared"  # a check that did not run says nothing of what changed
    ref_fired = ref is not None and ref.fired
    other_fired = other is not None and other.fired
    if other_fired and not ref_fired:
        return "appears"
    if ref_fired and not other_fired:
        return "disappears"
    if not ref_fired:
        return "same"
    if ref.key_metric and other.key_metric and ref.key_metric != other.key_metric:
        # Another form of the mode (answers cut at the budget against answers shortened):
        # "eases" or "escalates" would compare two different things.
        return "other_form"
    r, o = ref.status.rank, other.status.rank
    if o != r:
        return "escalates" if o > r else "eases"
    return "onset_moved" if ref.onset_step != other.onset_step else "same"


def compare_findings(diagnoses: Sequence[Diagnosis]) -> dict[str, FindingComparison]:
    """Every failure mode raised in at least one run, with what changed per run, in the
    order they began."""
    modes: list[str] = []
    for diagnosis in diagnoses:
        modes += [c.mode for c in diagnosis.findings if c.mode not in modes]
    out = {}
    for mode in modes:
        checks: list[Check | None] = []
        for diagnosis in diagnoses:
            try:
                checks.append(diagnosis.check(mode))
            except KeyError:
                checks.append(None)
        out[mode] = FindingComparison(
            mode=mode,
            statuses=tuple(c.status.value if c else None for c in checks),
            onsets=tuple(c.onset_step if c else None for c in checks),
            first_alerts=tuple(c.first_alert_step if c else None for c in checks),
            changes=(None, *(_change(checks[0], c) for c in checks[1:])),
        )
    # In the order they began (the earliest onset in any run that raised them), as diagnose
    # lists findings; a mode with no onset goes last.
    def began(mode: str) -> float:
        f = out[mode]
        onsets = [o for o, st in zip(f.onsets, f.statuses) if o is not None
                  and st in ("warning", "critical")]
        return min(onsets, default=float("inf"))

    return {mode: out[mode] for mode in sorted(out, key=began)}


# --- settings that explain a run's findings ---------------------------------------------------


def suspects(reference: Run, run: Run, reference_diagnosis: Diagnosis, diagnosis: Diagnosis
             ) -> tuple[Suspect, ...]:
    """The recipe's settings whose value in ``run`` differs from ``reference``'s in a direction
    the chapter links to a finding ``run`` has at a worse status than ``reference``: a pair
    of runs that differ in one setting is the strongest evidence there is, whatever the
    recipe's range (an lr 1e-4 -> 1e-3 on a small model, both above the chapter's ceiling).
    Primary links first."""
    ref_status = {c.mode: c.status.rank for c in reference_diagnosis.checks if c.fired}
    worse = {c.mode for c in diagnosis.checks
             if c.fired and c.status.rank > ref_status.get(c.mode, -1)}
    if not worse:
        return ()
    mine, theirs = recipe.read_run(run), recipe.read_run(reference)
    found: list[Suspect] = []
    for r in mine:
        ref = theirs.get(r.id)
        if ref is None or recipe.NOT_SET in (r.verdict, ref.verdict) or r.setting.note_only:
            continue
        a, b = ref.value, r.value
        if _same_value(a, b):
            continue
        x, y = recipe.as_number(a), recipe.as_number(b)
        if x is not None and y is not None:
            direction = "higher" if y > x else "lower"
            verdicts = {recipe.HIGH} if y > x else {recipe.LOW}
            if r.verdict in recipe.OUTSIDE and (r.verdict not in (recipe.HIGH, recipe.LOW)):
                verdicts.add(r.verdict)  # off or unsafe on this run's side: its own links
        else:
            direction, verdicts = f"set to {r.value_text}", {r.verdict}
        links = [lk for v in verdicts for lk in r.setting.risks.get(v, ()) if lk.mode in worse]
        if not links:
            continue
        modes = tuple(dict.fromkeys(lk.mode for lk in links))
        found.append(Suspect(r.name, (a, b), direction, modes, any(lk.primary for lk in links)))
    return tuple(sorted(found, key=lambda s: not s.primary))


def compared_first_action(reference: Run, run: Run, reference_diagnosis: Diagnosis,
                          diagnosis: Diagnosis, found: Sequence[Suspect]) -> str | None:
    """What to do first on ``run``, beside a reference: its diagnosis' first action, unless
    the reference ran healthy and one setting that differs from it is a primary known cause of
    what ``run`` has and the reference has not, while the diagnosis names a setting the
    reference ran healthy at (an lr 20x the chapter's ceiling, the control's own) or none.
    A setup problem with no setting in it (a reward that never scored) keeps its action."""
    cause = getattr(diagnosis, "root_cause", None)
    own = _own_action(diagnosis)
    top = next((x for x in found if x.primary), None)
    if cause is None or reference_diagnosis.status != "healthy":
        return own
    blamed = cause.knob if isinstance(cause.knob, dict) else {}
    knob = blamed.get("name")
    if knob is None and cause.setup:
        return own
    shared = knob is not None and _same_setting(reference, blamed.get("value"), knob)
    if knob is not None and not shared:
        # The setting it names differs from the reference's too: it stands, and the
        # reference's value is one this model is known to train at.
        same_knob = next((x for x in found if x.setting == knob or (
            own or "").startswith(f"{x.setting} ")), None)
        if own and same_knob is not None:
            return (f"{own}; the reference ran healthy at {same_knob.setting} "
                    f"{recipe._value_text(same_knob.values[0])}")
        return own
    same = (f"the reference ran healthy at {knob} {recipe._value_text(blamed['value'])} too"
            if shared else "")
    if top is None:
        return (f"look first at what else differs from the reference (in the config diff, or "
                f"outside the config: the data, the reward code, the model): {same}, and this "
                f"run's diagnosis names it: {own}") if same and own else own
    a, b = (recipe._value_text(v) for v in top.values)
    said = f"; then {own}" if own else ""
    return (f"{top.setting} {b} -> {a}, the reference's (it ran healthy at {a}; a {top.direction}"
            f" {top.setting} is a known cause of {', '.join(top.modes)}"
            f"{'; ' + same if same else ''}){said}")


def _same_setting(reference: Run, value: Any, setting_id: str) -> bool:
    """The reference set the recipe's ``setting_id`` to ``value``, the one the run's
    diagnosis blamed (as it read it: a config beside the log may not be the run's; h109)."""
    ref = recipe.read_run(reference).get(setting_id)
    return (value is not None and ref is not None and ref.verdict != recipe.NOT_SET
            and _same_value(value, ref.value))


def _same_value(a: Any, b: Any) -> bool:
    """One setting's two values alike, as numbers where both read as one (MLflow keeps params
    as text: "1.0" is 1.0)."""
    x, y = recipe.as_number(a), recipe.as_number(b)
    if x is not None and y is not None:
        return _same(x, y)
    return _same(a, b) or str(a) == str(b)


def _own_action(diagnosis: Diagnosis) -> str | None:
    cause = getattr(diagnosis, "root_cause", None)
    return getattr(cause, "first_action", None) if cause is not None else None


# --- the whole comparison --------------------------------------------------------------------


def _run_info(run: Run, diagnosis: Diagnosis) -> dict[str, Any]:
    # config_keys: how many settings the log held (0: none read, nothing to compare; the
    # model's size or its saved checkpoints, read from its words, are no setting).
    settings = {k: v for k, v in (run.config or {}).items() if k not in DERIVED_KEYS}
    return {**diagnosis.run.to_dict(), "status": diagnosis.status,
            "config_keys": len(knobs.flatten(settings)) if settings else 0}


def compare_runs(runs: Sequence[Run], diagnoses: Sequence[Diagnosis] | None = None
                 ) -> Comparison:
    """Compare ``runs`` with the first (see the module docstring). ``diagnoses`` (one per run)
    are made with the default settings when not given."""
    if isinstance(runs, Run) or not isinstance(runs, Sequence):
        raise ConfigError("compare_runs takes a list of Runs (the first is the reference), got "
                          f"{type(runs).__name__}")
    if len(runs) < 2:
        raise ConfigError("compare needs at least two runs (the first is the reference)")
    if not all(isinstance(r, Run) for r in runs):
        odd = next(type(r).__name__ for r in runs if not isinstance(r, Run))
        raise ConfigError(f"compare_runs takes Runs (load_run(path)), got {odd}")
    diags = list(diagnoses) if diagnoses is not None else [diagnose(r) for r in runs]
    canonical = {m for run in runs[:1] for m in run.mapping}
    shared = sorted((m for m in canonical if any(m in r.mapping for r in runs[1:])),
                    key=_metric_order)
    diff, origin = config_diff(runs)
    pairs = list(zip(runs[1:], diags[1:]))
    found: tuple[tuple[Suspect, ...], ...] = ((), *(suspects(runs[0], r, diags[0], d)
                                                    for r, d in pairs))
    actions = (_own_action(diags[0]), *(compared_first_action(runs[0], r, diags[0], d, f)
                                        for (r, d), f in zip(pairs, found[1:])))
    return Comparison(
        runs=tuple(_run_info(r, d) for r, d in zip(runs, diags)),
        config_diff=diff, config_origin=origin,
        metrics={m: compare_metric(runs, m) for m in shared},
        findings=compare_findings(diags),
        root_causes=tuple(getattr(d, "root_cause", None) for d in diags),
        suspects=found, first_actions=actions,
    )


def split_source(text: str) -> tuple[str, str | None]:
    """``SOURCE#RUN`` as (SOURCE, RUN): one run of a source holding several, by name (or run
    id where the format has them, as ``diagnose --run``). A path that exists as written (a
    ``#`` in a file name) is a source; so is text whose part before ``#`` is no source."""
    source, sep, run = text.rpartition("#")
    if not sep or not source or not run:
        return text, None
    if is_store_uri(text):  # a bucket's keys are not looked up here: # always picks a run
        return source, run
    if text.startswith("wandb://"):
        return source, run
    if Path(text).exists():
        return text, None
    # The first "#" after which the rest names a run: run names hold "#" too (a console log's
    # runs are "NAME#1", "NAME#2": "log#NAME#1" had read as a file "log#NAME", helper-67).
    at = text.find("#")
    while at > 0:
        if Path(text[:at]).exists() and text[at + 1:]:
            return text[:at], text[at + 1:]
        at = text.find("#", at + 1)
    return text, None


def load_compared(sources: Sequence[str | os.PathLike[str]], picks: Sequence[str] = (), *,
                  input_format: str | None = None, column_map: dict[str, str] | None = None
                  ) -> tuple[list[Run], list[str]]:
    """The runs to compare, in order, and notes on how sources holding several became runs.

    A source gives its one run; ``SOURCE#RUN`` the run it names; a source holding several
    runs gives those ``picks`` names (``--run``, in their order), else all of them, said in a
    note. The first source must give one run (the reference), unless it is the only source
    or its runs were picked by name: which of several would be the reference is not guessed.
    """
    from grpo_doctor.sources import load_runs

    given: list[tuple[str, list[Run], bool]] = []  # source, its runs, picked by name
    for item in sources:
        source, name = split_source(os.fspath(item))
        found = load_runs(source, format=input_format, column_map=column_map, run=name)
        if name is not None and len(found) > 1:
            raise ConfigError(f"{source} holds {len(found)} runs named {name!r}; pick one by "
                              "its run id")
        given.append((source, found, name is not None))
    if picks:
        _pick_runs(given, picks, input_format, column_map)
    runs: list[Run] = []
    notes: list[str] = []
    for k, (source, found, named) in enumerate(given):
        if len(found) > 1 and not named:
            names = _names(found)
            if k == 0 and len(given) > 1:
                raise ConfigError(f"{source} holds {len(found)} runs ({names}) and, given "
                                  f"first, would be the reference: pick its run with "
                                  f"{source}#RUN or --run RUN")
            first = ", the first as the reference" if k == 0 else ""
            notes.append(f"{source} holds {len(found)} runs: all compared{first} (pick some "
                         "with SOURCE#RUN or --run NAME)")
        runs += found
    if len(runs) < 2:
        raise ConfigError("compare needs at least two runs (the first is the reference)")
    return runs, notes


def _names(runs: Sequence[Run]) -> str:
    return ", ".join(r.name for r in runs[:8]) + (", ..." if len(runs) > 8 else "")


def _pick_runs(given: list[tuple[str, list[Run], bool]], picks: Sequence[str],
               input_format: str | None, column_map: dict[str, str] | None) -> None:
    """Narrow each source of ``given`` holding several runs (not already picked with
    ``SOURCE#RUN``) to the runs ``picks`` name, in their order; every pick must name a run."""
    several = [k for k, (_, found, named) in enumerate(given) if len(found) > 1 and not named]
    if not several:
        raise ConfigError(f"--run {picks[0]}: no source given holds several runs")
    used: set[str] = set()
    for k in several:
        source, found, _ = given[k]
        chosen = _picked(source, found, picks, input_format, column_map)
        if not chosen:
            raise ConfigError(f"{source} holds {len(found)} runs ({_names(found)}); "
                              f"--run {', '.join(picks)} names none of them")
        used |= {pick for pick, _ in chosen}
        given[k] = (source, [run for _, run in chosen], True)
    unused = [pick for pick in picks if pick not in used]
    if unused:
        sources = ", ".join(given[k][0] for k in several)
        raise ConfigError(f"--run {unused[0]}: no run of that name in {sources}")


def _picked(source: str, found: list[Run], picks: Sequence[str], input_format: str | None,
            column_map: dict[str, str] | None) -> list[tuple[str, Run]]:
    """The runs of ``source`` (already read as ``found``) that ``picks`` name, in their order:
    by name, else by run id as its importer matches them."""
    from grpo_doctor.errors import InputError
    from grpo_doctor.sources import load_runs

    chosen: list[tuple[str, Run]] = []
    for pick in picks:
        named = [r for r in found if r.name == pick]
        if not named:
            try:
                named = load_runs(source, format=input_format, column_map=column_map, run=pick)
            except InputError:  # not a run of this source
                continue
        chosen += [(pick, r) for r in named]
    return chosen


def compare_sources(sources: Sequence[str | os.PathLike[str]], settings: Settings | None = None,
                    *, input_format: str | None = None, picks: Sequence[str] = ()
                    ) -> tuple[Comparison, list[Run]]:
    """Load the runs ``sources`` give (see :func:`load_compared`: ``SOURCE#RUN``, ``picks``
    from sources holding several, else all their runs), diagnose each with ``settings``, and
    compare them with the first; also returns the runs (for charts)."""
    if isinstance(sources, (str, bytes, os.PathLike)):
        # One path is no list of them: iterated, its characters were read as paths ("/", the
        # whole file system; helper-77).
        raise ConfigError("compare_sources takes a list of sources (the first is the "
                          f"reference), got one path: {os.fsdecode(sources)!r}")
    if any(isinstance(x, Run) for x in sources):
        raise ConfigError("compare_sources takes paths; for runs already read, use "
                          "compare_runs(runs, diagnoses)")
    if not sources:
        raise ConfigError("compare needs at least two runs (the first is the reference)")
    s = settings or Settings()
    runs, notes = load_compared(sources, picks, input_format=input_format,
                                column_map=s.checked_map())
    cfg = s.doctor_config()
    diagnoses = [diagnose(run, cfg) for run in runs]
    return replace(compare_runs(runs, diagnoses), notes=tuple(notes)), runs
