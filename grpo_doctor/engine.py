"""Runs the rules over a run: skipped checks for missing metrics, first-alert steps by replay.

``first_alert_step`` is what a live monitor would have said: the earliest logged step s such
that diagnosing the log truncated at s already raises the finding. It is computed honestly,
by running the same rule on prefixes of the log: a coarse scan finds the first prefix that
raises, then bisection narrows it to the logged step where it first does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from grpo_doctor.config import DoctorConfig
from grpo_doctor.findings import (
    MIN_STEPS_FOR_HEALTHY,
    RUN_STOPPED,
    Check,
    Diagnosis,
    Incident,
    PlanItem,
    RootCause,
    RunInfo,
    Status,
)
from grpo_doctor.metrics import RL_METRICS, candidate_keys, is_reward_component
from grpo_doctor.rules import Outcome, Rule, Skip, knobs
from grpo_doctor.rules.base import ONSET
from grpo_doctor.rules.incidents import without_ongoing
from grpo_doctor.rules.points import series
from grpo_doctor.rules.signals import (
    cispo_cap,
    component_role,
    format_outweighs,
    heldout_gap,
    late_start,
    learning,
    nan_term_note,
    pinned_terms,
    reweighted_note,
    scorer_gaps,
    task_solved,
    unfinished_warmup,
    unscored_share,
)
from grpo_doctor.run_settings import with_run_settings
from grpo_doctor.signs import nan_beside, signs
from grpo_doctor.store import Run
from grpo_doctor.text import fmt, plural, step_text

if TYPE_CHECKING:
    from grpo_doctor.recipe import Reading, Setup

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
    return _first_raising(rule, run, params, steps, lo, hi)


def _first_raising(rule: Rule, run: Run, params: Mapping[str, float], steps: np.ndarray,
                   lo: int, hi: int) -> int:
    """The first of ``steps`` whose prefix raises the finding, by bisection between index
    ``lo`` (known not to raise; -1: before the first) and ``hi`` (known to raise)."""
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
    again: int | None = None  # the episode's own alert, after an earlier one cleared
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
            # Cleared: a monitor raised it again for the episode the summary describes.
            again = _raised_again(rule, run, params, cleared) if cleared is not None else None
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
        key_metric=out.key_metric, incidents=incidents, episode_alert_step=again,
    )


def _raised_again(rule: Rule, run: Run, params: Mapping[str, float], end: int) -> int | None:
    """The first logged step after ``end`` (where an earlier episode had cleared) whose
    prefix raises the finding again; None if the last step's does not."""
    later = run.steps[run.steps > end]
    if not len(later) or not _raises(rule, run, params, int(later[-1])):
        return None
    return _first_raising(rule, run, params, later, -1, len(later) - 1)  # -1: ``end`` itself


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
    # What it was raised as then: the finding's threshold line is its own now (54% of groups
    # equal, a warning, under "threshold: zero-std share >= 80%" read as below the line).
    severity = Status.CRITICAL if said.status is Status.CRITICAL else Status.WARNING
    return Incident(metric=metric or "", step=alert, peak_step=peak_step, peak=peak,
                    threshold=None, recovered_step=cleared, severity=severity,
                    # The rule's words are what it saw then ("it never came back" was true
                    # at the alert), so they are dated, and the clearing follows.
                    summary=f"at step {step_text(alert)}, as seen then ({severity.value}): "
                            f"{what}; {how} by step {step_text(cleared)}")


def _value_at(run: Run, metric: str | None, step: int) -> float:
    if not metric or metric not in run.frame.columns or step not in run.frame.index:
        return float("nan")
    return float(run.frame.at[step, metric])  # type: ignore[arg-type]


def diagnose(run: Run, /, config: DoctorConfig | None = None, *,
             with_first_alert: bool = True, **load: Any) -> Diagnosis:
    """Every selected rule over ``run``; never raises for a rule that cannot run. ``run`` may
    be a log's path too, read as ``load_run`` reads it with ``load``'s options
    (``diagnose("runs/", run="exp_b")``), or a DataFrame (as ``diagnose_frame`` reads one)."""
    run = _as_run(run, load)
    if config is not None and not isinstance(config, DoctorConfig):
        from grpo_doctor.errors import ConfigError

        raise ConfigError(f"config must be a DoctorConfig (DoctorConfig(select=('kl_drift',)), "
                          f"DoctorConfig.from_file(path)), got {type(config).__name__}")
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


def _as_run(run: object, load: Mapping[str, Any]) -> Run:
    """``run`` as a Run: a path read by ``load_run`` (with ``load``'s options), a DataFrame by
    ``run_from_frame``; an InputError for anything else (``diagnose("run.csv")`` had raised
    AttributeError)."""
    if isinstance(run, Run) and not load:
        return run
    if isinstance(run, Run):
        from grpo_doctor.errors import ConfigError

        raise ConfigError(f"{', '.join(sorted(load))}: options for reading a log, given with a "
                          "Run already read")
    if type(run).__name__ == "DataFrame":
        import inspect

        from grpo_doctor.errors import ConfigError
        from grpo_doctor.importers.in_memory import run_from_frame

        takes = set(inspect.signature(run_from_frame).parameters) - {"frame"}
        odd = sorted(set(load) - takes)
        if odd:  # (helper-77: a raw TypeError for diagnose(df, format="csv"))
            raise ConfigError(f"{', '.join(odd)}: not an option for a DataFrame (it takes "
                              f"{', '.join(sorted(takes))})")
        return run_from_frame(run, **load)  # type: ignore[arg-type]
    from grpo_doctor.sources import load_run

    return load_run(run, **load)  # type: ignore[arg-type]  # checks what it is given


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
    from grpo_doctor.hints import unmapped_hints, unread_notes
    from grpo_doctor.root_cause import (
        always_clipped_note,
        idle_settings,
        learned_before,
        lr_jump_note,
        lr_restarts_note,
        root_cause_and_plan,
        stopped_cause,
    )
    from grpo_doctor.rules.no_progress import low_task_note

    info = RunInfo(run.name, run.source, run.format, run.first_step, run.last_step, run.n_steps)
    hints = unmapped_hints(run)
    by_metric = {h.metric: h for h in hints}
    checks = [_with_hint(c, by_metric) for c in checks]
    setup = recipe.read_run(run, (config or DoctorConfig()).settings_of_recipe())
    checks = run_verdicts(run, checks, setup, config)
    cause, plan = root_cause_and_plan(run, checks, setup)
    stopped = _stopped_note(run, cause, checks) or _short_of_max_steps(run)
    if cause is None:
        cause = stopped_cause(run, sum(c.status is not Status.SKIPPED for c in checks))
        if cause is not None:
            plan = (PlanItem(cause.first_action, (RUN_STOPPED,)), *plan)
            stopped = None
    low = low_task_note(checks, _first_for_low(setup))
    slow = recipe.slow_lr_words(setup) if low else None
    if low and slow:
        low = f"{low}; {slow}"
    quiet = not any(c.fired for c in checks)
    gap = heldout_gap(run) if low or quiet else None
    carries = ("what it learns carries over little (too few or too alike training prompts, or "
               "a held-out set harder than them?)")
    if low and gap:
        # The training prompts solved meanwhile: no finding (an evaluation set harder than the
        # training prompts is common), but the first thing to look at (four training prompts:
        # 0.94 on them, 0.42 held out).
        low = f"{low}, while the training score reached {fmt(gap[0])}: {carries}"
    elif gap:
        # The same gap above the low mark (a pool of 8 prompts: 0.93 on them, 0.58 held out):
        # said, as a note, on a run nothing fired on.
        low = (f"the training score reached {fmt(gap[0])} while the held-out score ended at "
               f"{fmt(gap[1])}: {carries}")
    said = " ".join([cause.summary, cause.first_action] if cause else []) + " " + " ".join(
        p.action for p in plan)
    weighed = _format_weight_note(run, said)
    still = _still_term_note(run, checks, said)
    unscored = unscored_share(run)
    holes = nan_term_note(run) or reweighted_note(run)
    gaps = scorer_gaps(run)
    # Said where no finding's advice names it (no crash of the reward came of it).
    failed = (f"{gaps.words()}; retry or skip failed calls rather than score them"
              if gaps is not None and f"{gaps.term}'s scorer" not in said else None)
    jumped = lr_jump_note(run, said) or lr_restarts_note(run)
    blind = _no_config_note(run, cause) or _lr_not_applied_note(setup)
    clipped = always_clipped_note(run, setup)
    cap = cispo_cap(run)
    cispo = (f"loss_type cispo caps each importance weight at epsilon_high itself, "
             f"{fmt(cap[0])} ({cap[1]}), below the on-policy weight of 1: every token's "
             "weight is capped by construction (its clip ratio, which counts the "
             "positive-advantage ones, says nothing of the policy's pace); for the next run: "
             "epsilon_high 5.0, TRL's recommended value for cispo") if cap is not None else None
    warmup = unfinished_warmup(run) if quiet else None
    # Learned at the lr only when it trained at it: a warm-up that never ended proves nothing
    # of the configured lr (trial 63: "learned at 1e-4: keep it" under a logged peak of 1e-5).
    # (Not "keep it" where the task's score is still low: trial 76's lr 1e-5, 0.35 -> 0.42,
    # had read "learned at it: keep it" beside "the task's own score is still low".)
    # And the lr of a run that learned at it until something else broke it (a reward or the
    # data, whose first action names no step size): its own run is the evidence (trial 78: a
    # key that shifted at step 180 had read "for the next run: learning_rate 1e-4 -> 2.5e-6"
    # on a run that learned at 1e-4 until then).
    # (Not beside a finding a step size brings about: an entropy fallen 96% before the
    # break is the lr's too; h114.)
    learned_until = cause is not None and cause.step is not None and not quiet and (
        "learning_rate" not in cause.first_action and (cause.knob or {}).get(
            "name") != "learning_rate" and learned_before(run, cause.step)
        and not any(c.fired and c.mode in _STEP_SIZE_SIGNS for c in checks))
    settings = recipe.notes(setup, checks, idle_settings(run, setup), said,
                            proven=("learning_rate",) if (quiet and warmup is None and _learned(
                                run, checks)) or learned_until else (), kept_said=low is None)
    supervised = _supervised_only(run)
    if supervised is not None:
        # The recipe is GRPO's: no next-run lr for a supervised log (trial 65: an SFT stage's
        # 5e-5 read "for the next run: learning_rate 5e-5 -> 2.5e-6").
        settings = (supervised,)
    if quiet:
        # The lr never reached its setting: the warm-up, not the lr, is what to change (its
        # only advice had been to lower an lr the run never trained at; trial 49). And the
        # format weight, said on the line a healthy report shows under its verdict (the audit
        # had shown only the recipe's lr beside a format term weighed 5x the answer:
        # helper-57), not as a note.
        first = [f"{warmup.fix()}: {warmup.words()}" if warmup is not None else None,
                 _weight_fix(run) if weighed else None]
        settings = _with_first(settings, [f for f in first if f])
        weighed = None
    # How the run ended comes first: on a report with no finding it is what to act on (a
    # run cut off at step 109 of 200 had it as its fourth note, after the log's own, trial 60).
    nan_note = nan_beside(run) if run.n_steps >= MIN_STEPS_FOR_HEALTHY else None
    later = (_late_start_note(run), failed, low, still, holes, nan_note,
             unscored.words() if unscored else None, weighed, jumped, blind, clipped, cispo)
    notes = (((stopped,) if stopped else ()) + tuple(run.notes) + settings
             + tuple(n for n in later if n) + tuple(unread_notes(run)))
    diagnosis = Diagnosis(run=info, metrics=dict(run.mapping), checks=tuple(checks),
                          notes=notes, root_cause=cause, plan=plan,
                          hints=tuple(str(h) for h in hints), setup=tuple(setup.to_dict()))
    if run.n_steps < MIN_STEPS_FOR_HEALTHY:
        # Beside a finding too: a NaN on a pasted step had hidden that every completion of it
        # was cut at the cap and every sample scored -1 (Agent-R1#30, trial 50).
        diagnosis = replace(diagnosis, signs=signs(run))
    return diagnosis


#: Findings a step too large brings about: beside one, a run that learned before its break
#: is no proof of its lr.
_STEP_SIZE_SIGNS = frozenset({
    "entropy_collapse", "entropy_blowup", "kl_drift", "grad_explosion", "ratio_instability",
    "numerical_failure", "likelihood_displacement"})

#: The settings of the rollout's sampler: far outside the recipe, they change what each
#: group samples, what the reward measures and what the policy learns from.
_SAMPLER = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty",
            "no_repeat_ngram_size", "do_sample", "typical_p", "epsilon_cutoff", "eta_cutoff",
            "banned_tokens", "length_decay")
#: Settings every update is made with that the recipe links to a run not learning as their
#: primary risk: outside it, what to change first of a run whose task score stayed low
#: (trial 82: optim adagrad, correctness 0.38 -> 0.50 where its controls reached 0.87, had
#: read HEALTHY with "for the next run: optim adagrad -> adamw_torch").
_UPDATE = ("optimizer",)


def run_verdicts(run: Run, checks: Sequence[Check], setup: Setup,
                 config: DoctorConfig | None = None) -> list[Check]:
    """``checks`` with the verdicts only the whole run gives no_progress: learning unproven on
    a short log, a stall beside a setting far outside the recipe, a low task score under a
    sampler or an optimizer far outside it. The diagnosis and ``watch`` apply them alike (a
    watch had said "no failure mode found" where diagnose raised no_progress; h121)."""
    from grpo_doctor.rules import rule_named
    from grpo_doctor.rules.no_progress import (
        learning_unproven,
        low_under_setting,
        stalled_with_cause,
    )

    checks = list(checks)
    unproven = learning_unproven(run, checks)
    if unproven is not None:
        checks = [unproven if c.mode == unproven.mode else c for c in checks]
    progress = (config or DoctorConfig()).params_for(rule_named("no_progress"))
    stalled = stalled_with_cause(
        run, checks, [r.sentence() for r in setup.causes({"no_progress"}, critical=False)
                      if r.far], progress["patience"])
    if stalled is not None:
        checks = [stalled if c.mode == stalled.mode else c for c in checks]
    sampler = _far_cause_of_low(setup)
    held_low = low_under_setting(
        run, checks, (sampler.fix(), ("every update made with " if sampler.id in _UPDATE else
                                      "every sample drawn with ")
                      + f"{sampler.name} {sampler.value_text} ({sampler.how_far()})")
        if sampler is not None else None, progress)
    if held_low is not None:
        checks = [held_low if c.mode == held_low.mode else c for c in checks]
    return checks


def _far_cause_of_low(setup: Setup) -> Reading | None:
    """A sampler setting far outside the recipe (a repetition penalty of 5, a temperature of
    0.3: twice or more beyond its range, where the range is a number's), or an update setting
    far outside it (an optimizer without Adam's scaling)."""
    return next((r for r in setup.outside if r.far and (
        (r.id in _SAMPLER and (r.factor is None or r.factor >= _SAMPLER_FAR))
        or r.id in _UPDATE)), None)


#: How many times beyond its range a sampler setting must be to stand as the evidence of a
#: low score on its own: a temperature of 0.6, common in real runs, is not.
_SAMPLER_FAR = 2.0


def _first_for_low(setup: Setup) -> str | None:
    """The fix of a sampler setting far outside the recipe, said as what to change first of a
    run whose task score stayed low with nothing fired (trial 68: repetition_penalty 5 and
    temperature 0.3 had read "learning, slowly: check the reference answers first")."""
    far = next((r for r in setup.outside if r.far and r.id in (*_SAMPLER, *_UPDATE)), None)
    # Or merely outside, where the chapter names not learning as what it brings (trial 76:
    # temperature 1.6, correctness 0.17 -> 0.49 where its control reached 0.88, had read
    # "check the reference answers first", the temperature unsaid).
    far = far or next((r for r in setup.outside if r.id in _SAMPLER and not r.setting.note_only
                       and any(lk.primary and lk.mode == "no_progress" for lk in r.links)),
                      None)
    return f"{far.fix()} ({far.sentence()})" if far is not None else None


#: Logged steps over which a reward term that held one value is said in a note: fewer are
#: a short log's chance.
STILL_TERM_STEPS = 20


def _still_term_note(run: Run, checks: Sequence[Check], said: str) -> str | None:
    """The reward terms that never paid (0 or a fixed charge on every logged step: a format
    check whose pattern never matched, 0 on all 200 steps beside a correctness term that
    learned, trial 52; Unsloth's soft and strict format checks), when no finding or advice
    names them already; None otherwise. A term fixed at a positive value is met by every
    sample (a format a near-greedy sampler always keeps): no bug to look for. An anti-cheat
    term at 0 never caught anything, as it should."""
    named = said + " ".join(c.summary for c in checks if c.fired)
    still = [(n, v, k) for n, v, k in pinned_terms(run, STILL_TERM_STEPS)
             if v <= 0 and n not in named and component_role(run, n) != "cheat"]
    if not still:
        return None
    # Short: said on a healthy report, which reads in ten seconds.
    values = {v for _, v, _ in still}
    counts = {k for _, _, k in still}
    steps = f"all {counts.pop():,} logged steps" if len(counts) == 1 else "every logged step"
    names = ", ".join(n if len(values) == 1 else f"{n} ({fmt(v)})" for n, v, _ in still)
    level = f"{fmt(still[0][1])} on" if len(values) == 1 else "fixed on"
    return (f"{names}: {level} {steps}, never paying a completion (a pattern that never "
            "matches?)")


def _stopped_note(run: Run, cause: RootCause | None, checks: Sequence[Check]) -> str | None:
    """How the process ended, when it stopped on an error or an interrupt after the last
    logged step: said beside a root cause that explains the run (the error may be its
    consequence, a NaN the code then raised on); a run nothing else explains gets it as its
    root cause instead (``root_cause.stopped_cause``)."""
    ending = run.ending
    if ending is None or run.last_step is None:
        return None
    after = f"after step {step_text(run.last_step)}"
    if not ending.needs_fix:
        return (f"the run was stopped by hand ({ending.error}) {after}: the log ends there, "
                "not at the end of training")
    if cause is None:
        return None
    return (f"the run stopped on an error {after}: {ending.words()}; fix it before resuming")


def _lr_not_applied_note(setup: Setup) -> str | None:
    """The configured learning rate, when the logged one shows it never applied
    (``recipe.read_run``); None otherwise."""
    from grpo_doctor.recipe import LOGGED_LR_NOT_CONFIG

    lr = setup.get("learning_rate")
    if lr is None or not str(lr.source).startswith(LOGGED_LR_NOT_CONFIG):
        return None
    configured = str(lr.source)[len(LOGGED_LR_NOT_CONFIG):].strip()
    return (f"{configured} in the config never applied: the logged learning rate peaked at "
            f"{fmt(float(lr.value))}, decaying from the first logged step (a run resumed from "
            "a checkpoint keeps the checkpoint's optimizer and scheduler, so a learning rate "
            "edited for the resume does nothing); what it trained at is what is judged")


#: How the note of a log that ends short of its ``max_steps`` begins (audit lists it).
ENDS_SHORT = "the log ends at step "


def _short_of_max_steps(run: Run) -> str | None:
    """The log ending a logging interval or more before the ``max_steps`` its config sets,
    with no word of how it ended: a run still going, or one that stopped (a crash whose
    traceback is not in this log: trial 58's read HEALTHY over steps 1-120 of 200, unsaid).
    None when the log says how it ended, or the config sets no step count."""
    from grpo_doctor.recipe import as_number, flat_config, lookup

    if run.ending is not None or run.last_step is None or run.n_steps < 2 or (
            "train_runtime" in (run.summary or {})):
        return None  # (the Trainer's closing summary: it ended, at a stop a callback asked)
    total = as_number(lookup(flat_config(run.config or {}), ("max_steps",))[0])
    if total is None or total <= 0 or not float(total).is_integer():
        return None
    every = float(np.median(np.diff(run.steps)))
    if run.last_step + every > total:
        return None
    from grpo_doctor.root_cause import resume_words

    return (f"{ENDS_SHORT}{step_text(run.last_step)} of the {int(total):,} steps its "
            "config sets (max_steps), with no end of training in it: the run is still going, "
            f"or it stopped (killed, or an error its console output shows); if it stopped, "
            f"{resume_words(run)}")


def _late_start_note(run: Run) -> str | None:
    """The log starting well after the run began (``signals.late_start``): its earlier steps
    are elsewhere, or nowhere; what it reads "from the start" is from there."""
    first = late_start(run)
    if first is None:
        return None
    return (f"the log starts at step {step_text(first)}: the run's earlier steps are not in it "
            "(an excerpt, or a launch resumed from a checkpoint: the folder holding every "
            "launch reads them as one run)")


def _format_weight_note(run: Run, said: str) -> str | None:
    """A config that weighs a format term above the answer, when the advice (``said``) does
    not name it already; None otherwise."""
    found = format_outweighs(run)
    if found is None or found[0] in said:
        return None
    form, form_weight, answer, answer_weight = found
    return (f"the config weighs {form} at {fmt(form_weight)}, above {answer} at "
            f"{fmt(answer_weight)}: the reward pays the form more than a right answer, what "
            f"format gaming grows from; for the next run, weigh {answer} at least as high")


def _supervised_only(run: Run) -> str | None:
    """The note for a log with no RL metric at all (no reward, reward term, KL, entropy or
    completion length): a supervised (SFT) log, which the checks and the recipe do not read."""
    if RL_METRICS & set(run.mapping) or any(is_reward_component(m) for m in run.mapping):
        return None
    logged = ", ".join(sorted(run.mapping)) or "nothing grpo-doctor reads"
    return (f"no RL metric in this log (no reward, KL, entropy or completion length; it logs "
            f"{logged}): a supervised (SFT) log, or the supervised phase before RL? the checks "
            "and the recipe are GRPO's")


def _learned(run: Run, checks: Sequence[Check]) -> bool:
    """The run learned its task: solved by the end, or its own score up materially
    (no_progress's reading; slowly counts: a run learning slowly told to cut its lr 40x had
    read against the note that it was learning, trial 51)."""
    if task_solved(run):
        return True
    progress = next((c for c in checks if c.mode == "no_progress"), None)
    if progress is not None and progress.status is Status.SKIPPED and run.n_steps:
        # A log too short for no_progress (25 points every 10 steps): the task improving over
        # it, a correctness term with the reward, still counts (Gemma-3's reward 0.43 -> 1.51,
        # correctness 0.23 -> 0.95, had read "for the next run: learning_rate 1e-5 -> 2.5e-6").
        return learning(run, float(run.steps[0])).improving
    if progress is None or progress.status is not Status.OK:
        return False
    improving = progress.evidence.get("task_improving")
    return isinstance(improving, dict) and any(improving.values())


def _weight_fix(run: Run) -> str | None:
    """The format weight's fix for the next run, when the config weighs the form above the
    answer."""
    found = format_outweighs(run)
    if found is None:
        return None
    form, form_weight, answer, answer_weight = found
    return (f"{answer}'s weight {fmt(answer_weight)} -> {fmt(form_weight)}, or {form}'s "
            f"{fmt(form_weight)} -> {fmt(answer_weight)} (a reward that pays the form above a "
            "right answer is what format gaming grows from)")


def _with_first(settings: tuple[str, ...], fixes: Sequence[str]) -> tuple[str, ...]:
    """The settings notes with ``fixes`` first among the next run's settings (a note of
    their own when no setting is outside the recipe)."""
    from grpo_doctor.recipe import NEXT_RUN

    if not fixes:
        return settings
    fix = "; ".join(fixes)
    for k, note in enumerate(settings):
        if note.startswith("setup ") and NEXT_RUN in note:
            head, rest = note.split(NEXT_RUN, 1)
            return (*settings[:k], f"{head}{NEXT_RUN}{fix}; {rest}", *settings[k + 1:])
    return (f"setup outside what the run needs, no finding here shows its harm{NEXT_RUN}{fix}",
            *settings)


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
