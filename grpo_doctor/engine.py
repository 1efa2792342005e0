"""Runs the rules over a run: skipped checks for missing metrics, first-alert steps by replay.

``first_alert_step`` is what a live monitor would have said: the earliest logged step s such
that diagnosing the log truncated at s already raises the finding. It is computed honestly,
by running the same rule on prefixes of the log: a coarse scan finds the first prefix that
raises, then bisection narrows it to the logged step where it first does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from grpo_doctor.config import DoctorConfig
from grpo_doctor.findings import Check, Diagnosis, Incident, RootCause, RunInfo, Status
from grpo_doctor.metrics import candidate_keys
from grpo_doctor.rules import Outcome, Rule, Skip, knobs
from grpo_doctor.rules.base import ONSET
from grpo_doctor.rules.incidents import without_ongoing
from grpo_doctor.rules.points import series
from grpo_doctor.rules.signals import heldout_gap
from grpo_doctor.store import Run
from grpo_doctor.text import fmt, plural, step_text

#: Prefixes tried in the coarse scan for the first alert.
SCAN_POINTS = 48


def _missing(rule: Rule, run: Run) -> str | None:
    absent = [m for m in rule.requires if not run.has(m)]
    if absent:
        looked = candidate_keys(absent[0])[:4]
        hint = f" (looked for {', '.join(looked)}, ...; map a column with --map)" if looked else ""
        return f"needs {' and '.join(absent)}: not logged{hint}"
    if rule.requires_any and not any(all(run.has(m) for m in group)
                                     for group in rule.requires_any):
        options = " or ".join("+".join(g) for g in rule.requires_any)
        return f"needs {options}, none logged"
    return None


def _logged_points(rule: Rule, run: Run) -> int:
    """The finite logged points ``rule.min_points`` counts (see ``Rule.counted_metrics``)."""
    counts = [len(series(run, m)[1]) for m in rule.counted_metrics if run.has(m)]
    return max(counts) if counts else (run.n_steps if not rule.counted_metrics else 0)


def judge(rule: Rule, run: Run, params: Mapping[str, float]) -> Outcome:
    """``rule.detect`` on ``run`` with the rule's minimum of logged points enforced: on a
    shorter log, what the rule can still tell from it (its short-log reader), else a ``Skip``
    saying how many points it needs. Raises ``Skip``."""
    need = rule.points_needed(params)
    if need and _logged_points(rule, run) < need:
        out = rule.short_log(run, params) if rule.short_log else None
        if out is None:
            raise Skip(f"needs at least {int(need)} logged {rule.points}")
        return out
    return rule.detect(run, params)


def _raises(rule: Rule, run: Run, params: Mapping[str, float], last_step: int) -> bool:
    try:
        return judge(rule, run.truncated(last_step), params).fired
    except Skip:
        return False


def first_alert(rule: Rule, run: Run, params: Mapping[str, float]) -> int | None:
    """Earliest logged step whose prefix raises this rule's finding (see module docstring)."""
    steps = run.steps
    n = len(steps)
    if n == 0:
        return None
    grid = np.unique(np.linspace(0, n - 1, min(n, SCAN_POINTS)).round().astype(int))
    lo = -1  # index known not to raise (-1: the empty log)
    hi = None
    for idx in grid:
        if _raises(rule, run, params, int(steps[idx])):
            hi = int(idx)
            break
        lo = int(idx)
    if hi is None:
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _raises(rule, run, params, int(steps[mid])):
            hi = mid
        else:
            lo = mid
    return int(steps[hi])


def check_rule(rule: Rule, run: Run, params: Mapping[str, float], *,
               with_first_alert: bool = True) -> Check:
    reason = _missing(rule, run)
    if reason:
        return Check(rule.id, Status.SKIPPED, reason.split(" (", 1)[0], reason=reason)
    try:
        out = judge(rule, run, params)
    except Skip as exc:
        return Check(rule.id, Status.SKIPPED, str(exc), reason=str(exc))
    alert = first_alert(rule, run, params) if (out.fired and with_first_alert) else None
    onset = shown = out.onset_step  # shown: the onset step the summary names
    incidents = out.incidents
    if alert is not None and onset is not None and alert < onset:
        # A monitor could call it at ``alert``, so it had begun by then: the onset estimate
        # was late, or an earlier episode, one the run came back from, raised it first.
        cleared = _cleared(rule, run, params, alert, onset)
        receded = _receded(run, out.key_metric, alert, onset)
        if cleared is None and receded is None:
            onset = shown = alert  # the onset estimate was merely late
        else:
            # An earlier episode raised it first: an incident. When what raised it went most
            # of the way back before the episode the rule dates (a bump, then the real thing),
            # the onset stays where the real thing began; else the finding began at the alert.
            end = cleared if cleared is not None else receded
            assert end is not None
            episode = _earlier_episode(rule, run, params, out.key_metric, alert, end,
                                       "cleared" if cleared is not None else "mostly receded")
            incidents = (episode, *incidents)
    summary = out.summary if shown is None else out.summary.replace(ONSET, step_text(shown))
    if shown is not None and shown != out.onset_step and ONSET not in out.summary:
        # The onset moved to the alert, and the sentence names other steps (a knot after an
        # earlier incident): it says where the finding was first raised too.
        summary += f"; raised from step {step_text(shown)}"
    evidence = dict(out.evidence)
    proxies = {m: run.proxies[m] for m in (rule.requires + ((out.key_metric,) if
               out.key_metric else ())) if m in run.proxies}
    if proxies:
        evidence["proxies"] = proxies
    return Check(
        mode=rule.id, status=out.status, summary=summary, onset_step=onset,
        first_alert_step=alert, evidence=evidence,
        remedies=knobs.present(*out.remedies) if out.fired else (),
        key_metric=out.key_metric, incidents=incidents,
    )


def _cleared(rule: Rule, run: Run, params: Mapping[str, float], alert: int, onset: int
             ) -> int | None:
    """The first logged step after ``alert`` whose prefix no longer raises the finding, if
    it comes before ``onset`` (the finding came, went, and came back: two episodes); None when
    it stayed raised (the onset estimate was merely late)."""
    steps = run.steps
    between = steps[(steps > alert) & (steps < onset)]
    if not len(between):
        return None
    grid = np.unique(np.linspace(0, len(between) - 1, min(len(between), SCAN_POINTS))
                     .round().astype(int))
    lo = -1  # index known to raise (-1: the alert itself)
    for idx in grid:
        if not _raises(rule, run, params, int(between[idx])):
            hi = int(idx)
            break
        lo = int(idx)
    else:
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _raises(rule, run, params, int(between[mid])):
            lo = mid
        else:
            hi = mid
    return int(between[hi])


#: Logged points between a first alert and a later onset for the alert to count as another
#: episode when the metric receded in between (fewer: the onset estimate is merely late).
RECEDED_GAP = 5


def _receded(run: Run, metric: str | None, alert: int, onset: int) -> int | None:
    """The first logged step after ``alert``, up to ``onset``, where ``metric`` went back most of
    the way to its level before the alert (nearer the earlier median than to its value at the
    alert), when the two are at least ``RECEDED_GAP`` logged points apart; else None."""
    if not metric or metric not in run.frame.columns:
        return None
    col = run.frame[metric].dropna()
    col = col[np.isfinite(col.to_numpy(dtype=np.float64))]
    idx = col.index.to_numpy()
    before = col[idx < alert]
    # The onset itself counts: a climb dated from the low it started from went back there.
    between = col[(idx > alert) & (idx <= onset)]
    if len(before) < 3 or len(between) < RECEDED_GAP or alert not in col.index:
        return None
    level, at_alert = float(before.median()), float(col.loc[alert])
    reach = abs(at_alert - level)
    if reach == 0:
        return None
    back = between[np.abs(between.to_numpy(dtype=np.float64) - level) < reach / 2]
    return int(back.index[0]) if len(back) else None


def _earlier_episode(rule: Rule, run: Run, params: Mapping[str, float], metric: str | None,
                     alert: int, cleared: int, how: str = "cleared") -> Incident:
    """The episode that raised the finding at ``alert`` and was over by ``cleared``, in the
    rule's own words as a monitor at ``alert`` would have said them (what it saw, its level
    and threshold), then when it was raised and cleared."""
    said = judge(rule, run.truncated(alert), params)
    what = without_ongoing(said.summary.replace(
        ONSET, step_text(said.onset_step if said.onset_step is not None else alert)))
    peak_step, peak = alert, _value_at(run, metric, alert)
    if metric and metric in run.frame.columns:
        during = run.frame[metric].loc[alert:cleared - 1].dropna()
        if len(during):
            at = int(np.argmax(during.to_numpy()))
            peak_step, peak = int(during.index[at]), float(during.iloc[at])
    return Incident(metric=metric or "", step=alert, peak_step=peak_step, peak=peak,
                    threshold=None, recovered_step=cleared, severity=Status.WARNING,
                    # The rule's words are what it saw then ("it never came back" was true
                    # at the alert), so they are dated, and the clearing follows.
                    summary=f"at step {step_text(alert)}, as seen then: {what}; {how} by "
                            f"step {step_text(cleared)}")


def _value_at(run: Run, metric: str | None, step: int) -> float:
    if not metric or metric not in run.frame.columns or step not in run.frame.index:
        return float("nan")
    return float(run.frame.at[step, metric])  # type: ignore[arg-type]


def diagnose(run: Run, config: DoctorConfig | None = None, *,
             with_first_alert: bool = True) -> Diagnosis:
    """Every selected rule over ``run``; never raises for a rule that cannot run."""
    cfg = config or DoctorConfig()
    run = with_reward_roles(with_run_settings(run, cfg.run_config), cfg.reward_roles)
    checks = [check_rule(rule, run, cfg.params_for(rule), with_first_alert=with_first_alert)
              for rule in cfg.rules()]
    found = replace(assemble(run, checks, cfg), config=cfg.applied())
    if cfg.select and found.status == "healthy":
        n_other = len(found.config["ignored"]) if found.config else 0
        said = (f"healthy for the selected checks only ({', '.join(c.mode for c in checks)})"
                + (f": the other {plural(n_other, 'check')} did not run" if n_other else ""))
        found = replace(found, notes=(said, *found.notes))
    return found


def with_run_settings(run: Run, given: Mapping[str, object]) -> Run:
    """``run`` with every setting it was made with that its log does not hold: the ones the
    user gave (``[config]``, ``--train-config``), then those of a config beside the log,
    each checked against what the log recorded (``with_given_config``)."""
    run, merged, beside = _with_beside_as_given(run, given)
    return with_given_config(run, merged, beside)


def _with_beside_as_given(run: Run, given: Mapping[str, object]
                          ) -> tuple[Run, dict[str, object], dict[str, str]]:
    """``run`` without the settings read from a config beside its log, and those settings
    as given ones under the user's (``[config]``, ``--train-config`` win over a file that may
    be another run's), with the file each came from: checked against the log as given
    settings are (``with_given_config``)."""
    if not run.config_beside:
        return run, dict(given), {}
    from grpo_doctor.recipe import flat_config

    found = {k: v for k, v in run.config.items() if k in run.config_beside}
    flat = flat_config(found)
    refused = _bad_values(flat)
    flat = {k: v for k, v in flat.items() if k not in refused}
    own = {k: v for k, v in run.config.items() if k not in found}
    where = next(iter(run.config_beside.values()))
    beside = {k: run.config_beside.get(k.split(".", 1)[0], where) for k in flat
              if k not in given}
    notes = [*run.notes, *(f"{why} (in {where}): left out, no trainer takes it"
                           for why in refused.values())]
    overridden = sorted(k for k in flat if k in given and str(flat[k]) != str(given[k])
                        and _recipe_key(k))
    if overridden:
        notes.append(f"the settings given ([config] or --train-config) are used over {where} "
                     f"for {', '.join(f'{k} ({flat[k]} there)' for k in overridden)}")
    return (replace(run, config=own, config_beside={}, notes=notes), {**flat, **given},
            beside)


def _recipe_key(key: str) -> bool:
    """Whether the recipe reads ``key`` (under any of its settings' names)."""
    from grpo_doctor.recipe import SETTINGS

    return any(key == name or key.endswith("." + name) for s in SETTINGS for name in s.names)


def _bad_values(flat: Mapping[str, object]) -> dict[str, str]:
    """The settings of ``flat`` no trainer takes (a group size of 16.5, a learning rate of
    -1), each with why: refused in a file given to preflight or ``--train-config``, left
    out when read from beside a log."""
    from grpo_doctor.recipe import bad_value, read_config

    out: dict[str, str] = {}
    for reading in read_config(flat).readings:
        why = bad_value(reading)
        if why is not None and reading.source is not None and reading.source in flat:
            out[reading.source] = why
    return out


def with_given_config(run: Run, given: Mapping[str, object],
                      beside: Mapping[str, str] | None = None) -> Run:
    """``run`` with the settings a user gave (the config file's ``[config]``, or
    ``--train-config``) where its log sets none: the log's own config wins where both set a
    knob. ``beside``: the given keys read from a config file beside the log (key -> path),
    said as that file's and not listed as the user's."""
    if not given:
        return run
    from grpo_doctor.recipe import flat_config

    beside = beside or {}
    own = flat_config(run.config) if run.config else {}
    added = {k: v for k, v in given.items()
             if not any(key == k or key.endswith("." + k) for key in own)}
    # A trainer's saved config holds no misspelt key: only the user's are checked.
    unread = _unread_keys({k: v for k, v in given.items() if k not in beside})
    added = {k: v for k, v in added.items() if k not in unread}
    notes = [*run.notes, *_own_config_disagreements(own, given, beside),
             *(f"{k} given: not a setting grpo-doctor reads (did you mean {near}?); it changes "
               "nothing here" for k, near in unread.items())]
    if not added:
        return replace(run, notes=notes)
    before = set(added)
    notes += _logged_disagreements(run, added, beside)
    refuted = sorted(k for k in before - set(added) if k in beside)
    if refuted:
        # The log contradicts the file beside it: the file is likely another run's, and its
        # other settings (a temperature of 2 the log cannot check) are no evidence either.
        where = beside[refuted[0]]
        dropped = sorted(k for k in added if k in beside and _recipe_key(k))
        added = {k: v for k, v in added.items() if k not in beside}
        if dropped:
            notes.append(f"{where} is contradicted by the log ({', '.join(refuted)}): none of "
                         f"its settings is used ({', '.join(dropped)} left out)")
    users = {k: v for k, v in added.items() if k not in beside}
    if not users:
        return replace(run, config={**run.config, **added}, notes=notes)
    # "The log's own config": the log may still log one of them as a metric (a learning
    # rate curve); what it lacks is a config naming them.
    note = ("settings given for the run ([config] or --train-config; the log's own config "
            f"names none of them): {_given_words(users)}")
    return replace(run, config={**run.config, **added}, notes=[*notes, note])


def _given_words(added: Mapping[str, object]) -> str:
    """The given settings the advice reads, by the names the file gives them, and how many
    other keys came with them ("learning_rate, num_generations and 20 more keys"): a
    config file of 40 keys listed whole buries the report it heads."""
    read = sorted(k for k in added if _recipe_key(k))
    if not read:
        return ", ".join(sorted(added))
    rest = len(added) - len(read)
    return ", ".join(read) + (f" and {plural(rest, 'more key', 'more keys')}" if rest else "")


def _origin(key: str, beside: Mapping[str, str]) -> str:
    """How a setting came: "given" (by the user), or where it was read ("in
    training_args.bin beside the log", "in the notebook's code")."""
    return f"in {beside[key]}" if key in beside else "given"


def _own_config_disagreements(own: Mapping[str, object], given: Mapping[str, object],
                              beside: Mapping[str, str]) -> list[str]:
    """Given settings the log's own config sets otherwise: the log's value is used (it is
    what the run ran with), and a note says so rather than drop the given one silently."""
    from grpo_doctor.recipe import SETTINGS, as_number, lookup
    from grpo_doctor.text import knob_value

    def shown(value: object) -> str:
        x = as_number(value)
        return knob_value(x) if x is not None else str(value)

    out = []
    for s in SETTINGS:
        value, key = lookup(given, s.names)
        logged, own_key = lookup(own, s.names)
        if key is None or own_key is None or value is None or logged is None:
            continue
        if key.rsplit(".", 1)[-1] != own_key.rsplit(".", 1)[-1]:
            continue  # two settings one recipe knob stands for (verl's kl_loss_coef, kl_coef)
        x, y = as_number(value), as_number(logged)
        same = (x is not None and y is not None and abs(x - y) <= 1e-9 * max(abs(x), abs(y))
                ) or str(value).strip().lower() == str(logged).strip().lower()
        if not same:
            out.append(f"{key} {shown(value)} {_origin(key, beside)}, but the log's own config "
                       f"has {own_key} "
                       f"{shown(logged)}: the log's value is used (is the config this run's?)")
    return out


def _unread_keys(given: Mapping[str, object]) -> dict[str, str]:
    """Given keys the advice reads under no name and that look like a misspelling of one
    (``temprature``), with the name they are near: said, since they change nothing."""
    import difflib

    from grpo_doctor.recipe import SETTINGS

    names = {n.rsplit(".", 1)[-1] for s in SETTINGS for n in s.names}
    out = {}
    for key in given:
        last = str(key).rsplit(".", 1)[-1]
        if last in names:
            continue
        # 0.88: a letter dropped or swapped (temprature, learning_rte), not another real
        # key of the trainers (num_train_epochs is 0.8 from num_ppo_epochs).
        near = difflib.get_close_matches(last, sorted(names), n=1, cutoff=0.88)
        if near and last.rstrip("0123456789") != near[0]:  # beta1: Adam's, not a typo
            out[str(key)] = near[0]
    return out


def _logged_disagreements(run: Run, added: dict[str, object],
                          beside: Mapping[str, str]) -> list[str]:
    """Given settings the log's own curve contradicts (a learning rate of 7.9e-6 given, the
    logged one peaking at 9.8e-5). A logged peak above the given value proves the run ran at
    it: the log's value is kept (``added`` loses the key). One below it may be a schedule
    that decayed before the log began: the given value stands, unless the log shows the
    schedule's peak (it begins at its first logging interval). Either way a note says so.
    ``beside``: the keys read from a config file beside the log, said as that file's."""
    from grpo_doctor.recipe import SETTINGS, as_number, lookup
    from grpo_doctor.text import knob_value

    out: list[str] = []
    for s in SETTINGS:
        value, key = lookup(added, s.names)
        x = as_number(value)
        if s.id == "max_completion_length" and key is not None and x is not None:
            capped = _cap_contradicted(run, key, x, beside)
            if capped is not None:
                del added[key]
                out.append(capped)
            continue
        if (s.id == "beta" and key in beside and key is not None
                and key.rsplit(".", 1)[-1] == "beta" and x == 0):
            leashed = _beta_contradicted(run, key, beside)
            if leashed is not None:
                del added[key]
                out.append(leashed)
            continue
        if not s.metric or s.metric not in run.frame.columns:
            continue
        steps, logged = run.finite_series(s.metric)
        if x is None or key is None or not len(logged) or x <= 0:
            continue
        peak = knobs.schedule_peak(steps, logged)
        if s.id != "learning_rate":
            peak = float(logged[-1])
        if abs(peak - x) <= 0.25 * max(abs(peak), abs(x)):
            continue
        said = f"{key} {knob_value(x)} {_origin(key, beside)}"
        kept = "the given value is used" if key not in beside else "the file's value is used"
        held = _held_until(steps, logged, x) if s.id == "learning_rate" else None
        if held is not None and peak > x:
            # The log ran at the given lr, and above it before or after: the config is this
            # run's; the jump or the burst is what the log adds (a scheduler restarted, a
            # resume, a schedule that starts at its peak).
            high = steps[logged > x * 1.25]
            if len(high) and high[0] < held[0]:
                out.append(f"{said}, as the log's own {s.metric} held from step "
                           f"{step_text(held[0])}; it was up to {knob_value(peak)} before "
                           f"(steps {step_text(high[0])}-{step_text(high[-1])}): {kept}")
            else:
                out.append(f"{said}, as the log's own {s.metric} held until step "
                           f"{step_text(held[1])}; it then rose to {knob_value(peak)}: {kept}")
            continue
        if peak > x or (s.id == "learning_rate" and _peak_seen(steps, logged)):
            del added[key]
            reach = "reaches" if peak > x else "peaks at"
            out.append(f"{said}, but the log's own {s.metric} {reach} {knob_value(peak)}: the "
                       "log's value is used (is the config this run's?)")
        elif s.id == "learning_rate":
            out.append(f"{said}; the log's own {s.metric} is at most {knob_value(peak)} (a "
                       f"schedule that decayed before the log began?): {kept}")
        else:
            out.append(f"{said}; the log's own {s.metric} ends at {knob_value(peak)} (an "
                       f"adaptive coefficient, or another setting of that name?): {kept}")
    return out


#: The median share of completions cut from which the longest logged one is the run's cap.
_CUT_AT_CAP = 0.2


def _cap_contradicted(run: Run, key: str, cap: float, beside: Mapping[str, str]) -> str | None:
    """A note when the log's completions ran longer than the completion budget given
    (``max_completion_length`` 256 beside a log whose longest completion is 1849 tokens): the
    budget is not this run's, and the advice must not shrink what the run had."""
    from grpo_doctor.metrics import Metric
    from grpo_doctor.text import knob_value

    # The longest completion logged, else the mean (no mean can pass the cap either).
    _, longest = run.finite_series(Metric.RESPONSE_LENGTH_MAX.value)
    _, cut = run.finite_series(Metric.TRUNCATION_RATIO.value)
    if (len(longest) and len(cut) and cap > 0 and float(np.median(cut)) >= _CUT_AT_CAP
            and float(longest.max()) < 0.8 * cap):
        # Many completions cut, none longer than a fraction of the budget: the run's cap was
        # the log's, not this one (a 1,024 configured, completions cut at 128).
        return (f"{key} {knob_value(cap)} {_origin(key, beside)}, but the log's completions "
                f"are cut at about {fmt(float(longest.max()))} tokens ({float(np.median(cut)):.0%}"
                " of them at that cap): the log's value is used (is the config this run's?)")
    what = "completions reach"
    if not len(longest):
        _, longest = run.finite_series(Metric.RESPONSE_LENGTH_MEAN.value)
        what = "mean completion length reaches"
    if not len(longest) or cap <= 0 or float(longest.max()) <= 1.05 * cap:
        return None
    return (f"{key} {knob_value(cap)} {_origin(key, beside)}, but the log's {what} "
            f"{fmt(float(longest.max()))} tokens: the log's value is used (is the config this "
            "run's?)")


def _beta_contradicted(run: Run, key: str, beside: Mapping[str, str]) -> str | None:
    """A note when TRL's ``beta`` 0, read from a file beside the log, meets a log that records a
    KL to the reference: TRL computes and logs it only when beta is not 0 (a default config
    saved by a newer TRL beside an older run's log), so the run had a leash of unknown
    strength. A beta 0 the user gives is trusted: a custom trainer may log the KL anyway."""
    from grpo_doctor.metrics import Metric

    _, kl = run.finite_series(Metric.KL.value)
    if not len(kl) or float(np.max(np.abs(kl))) <= 0:
        return None
    return (f"{key} 0 {_origin(key, beside)}, but the log records a KL to the reference (up "
            f"to {fmt(float(np.max(kl)))}), which TRL logs only when beta is not 0: beta is "
            "left unknown (is the config this run's?)")


def _held_until(steps: np.ndarray, logged: np.ndarray, x: float) -> tuple[int, int] | None:
    """The first and last step of the log's first stretch of 8 or more logged values within
    5% of ``x`` (a level the run held at the given value), or None. A schedule decaying
    through ``x`` is not held there: a linear decay 5e-6 -> 0 over 250 steps spends 25 steps
    within a quarter of 1e-6, and 1e-6 was read as the run's lr."""
    near = np.abs(logged - x) <= 0.05 * x
    run_len = 0
    for i, ok in enumerate(near):
        run_len = run_len + 1 if ok else 0
        if run_len >= 8 and (i + 1 == len(near) or not near[i + 1]):
            return int(steps[i - run_len + 1]), int(steps[i])
    return None


def _peak_seen(steps: np.ndarray, lr: np.ndarray) -> bool:
    """Whether a logged learning rate shows its schedule's peak: the log begins within its
    first logging interval and the rate is not still rising at its end (a warm-up the log
    cut short). A given value above that peak is contradicted, not a decay the log missed."""
    return len(lr) >= 3 and knobs.starts_with_run(steps) and not lr[-1] > lr[-2]


def with_reward_roles(run: Run, given: Mapping[str, str]) -> Run:
    """``run`` with the reward components' roles the user gave. A name may be the component's
    short name (``mc_idx_reward``), its canonical column (``reward_component/mc_idx_reward``)
    or the logged column (``rewards/mc_idx_reward/mean``); a name the run does not log is a
    note, not an error (an audit's runs log different terms)."""
    if not given:
        return run
    from grpo_doctor.metrics import REWARD_COMPONENT_PREFIX
    from grpo_doctor.rules.signals import components

    short = components(run)
    by_column = {run.mapping.get(c, c): n for n, c in short.items()}
    roles: dict[str, str] = {}
    missing = []
    for name, role in given.items():
        found = (name if name in short else name[len(REWARD_COMPONENT_PREFIX):]
                 if name.startswith(REWARD_COMPONENT_PREFIX) else by_column.get(name))
        if found is None or found not in short:
            missing.append(name)
        else:
            roles[found] = role
    notes = run.notes
    if missing:
        logged = ", ".join(sorted(short)) or "none"
        notes = [*notes, f"reward roles given for terms this run does not log: "
                         f"{', '.join(missing)} (its reward terms: {logged})"]
    return replace(run, reward_roles={**run.reward_roles, **roles}, notes=notes)


def assemble(run: Run, checks: Sequence[Check], config: DoctorConfig | None = None
             ) -> Diagnosis:
    """The Diagnosis of ``checks`` on ``run``: the run's facts, its settings against the
    recipe, the root cause and the plan, and a ``--map`` hint wherever a check was skipped for
    a metric an unmapped column holds."""
    from grpo_doctor import recipe
    from grpo_doctor.hints import unmapped_hints
    from grpo_doctor.root_cause import (
        always_clipped_note,
        idle_settings,
        lr_jump_note,
        root_cause_and_plan,
    )
    from grpo_doctor.rules import rule_named
    from grpo_doctor.rules.no_progress import (
        learning_unproven,
        low_task_note,
        stalled_with_cause,
    )

    info = RunInfo(run.name, run.source, run.format, run.first_step, run.last_step, run.n_steps)
    hints = unmapped_hints(run)
    by_metric = {h.metric: h for h in hints}
    checks = [_with_hint(c, by_metric) for c in checks]
    unproven = learning_unproven(run, checks)
    if unproven is not None:
        checks = [unproven if c.mode == unproven.mode else c for c in checks]
    setup = recipe.read_run(run, (config or DoctorConfig()).settings_of_recipe())
    stalled = stalled_with_cause(
        run, checks, [r.sentence() for r in setup.causes({"no_progress"}, critical=False)
                      if r.far],
        (config or DoctorConfig()).params_for(rule_named("no_progress"))["patience"])
    if stalled is not None:
        checks = [stalled if c.mode == stalled.mode else c for c in checks]
    cause, plan = root_cause_and_plan(run, checks, setup)
    low = low_task_note(checks)
    slow = recipe.slow_lr_words(setup) if low else None
    if low and slow:
        low = f"{low}; {slow}"
    gap = heldout_gap(run) if low else None
    if low and gap:
        # The training prompts solved meanwhile: no finding (an evaluation set harder than the
        # training prompts is common), but the first thing to look at (four training prompts:
        # 0.94 on them, 0.42 held out).
        low = (f"{low}, while the training score reached {fmt(gap[0])}: what it learns carries "
               "over little (too few or too alike training prompts, or a held-out set harder "
               "than them?)")
    said = " ".join([cause.summary, cause.first_action] if cause else []) + " " + " ".join(
        p.action for p in plan)
    jumped = lr_jump_note(run, said)
    blind = _no_config_note(run, cause)
    clipped = always_clipped_note(run, setup)
    notes = (tuple(run.notes) + recipe.notes(setup, checks, idle_settings(run, setup), said)
             + tuple(n for n in (low, jumped, blind, clipped) if n))
    return Diagnosis(run=info, metrics=dict(run.mapping), checks=tuple(checks),
                     notes=notes, root_cause=cause, plan=plan,
                     hints=tuple(str(h) for h in hints), setup=tuple(setup.to_dict()))


def _no_config_note(run: Run, cause: RootCause | None) -> str | None:
    """A cause read off a logged curve (the learning rate) on a run with no config at all:
    no other setting could be weighed against it (an entropy bonus of 1.0, a temperature of 2
    that the log does not show), and the user is told how to give them."""
    if run.config or cause is None or not cause.knob:
        return None
    if not str(cause.knob.get("source") or "").startswith("logged"):
        return None
    return ("no training config was found with this log: the setting named above is read "
            "off its logged curve, and no other (beta, temperature, entropy bonus, clipping) "
            "could be weighed; give the run's config with --train-config FILE (or [config] in "
            "grpo-doctor.toml)")


def _with_hint(check: Check, hints: Mapping[str, object]) -> Check:
    """A skipped check whose missing metric an unmapped column seems to hold says so."""
    if check.status is not Status.SKIPPED or not check.reason:
        return check
    for metric, hint in hints.items():
        if check.reason.startswith(f"needs {metric}") or f" {metric}+" in check.reason \
                or f"needs {metric}+" in check.reason:
            reason = f"needs {metric}: not logged under a known name ({hint})"
            return replace(check, summary=reason, reason=reason)
    return check
