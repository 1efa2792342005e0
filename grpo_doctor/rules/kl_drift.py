"""KL drift: the policy walking away from the reference.

What it detects
    KL(pi || pi_ref) rising and staying high, in the usual bands: < 0.5 normal; 0.5-5
    drifting, controllable (above ``drift_kl`` and rising: a warning); 5-20 dangerous, likely
    reward hacking (above ``adapt_kl``: adapt beta, critical with stalled reward; above
    ``stop_kl``, 10, inside this band: critical, stop); > 20 almost certainly collapsed. And
    every incident in the run's history: KL above ``stop_kl`` at any logged step, even when
    the run came back below it later.

Why it matters
    KL is the leash. A policy far from the reference is usually exploiting the verifier or the
    reward model rather than learning the task; past KL ~ 10-20 runs rarely come back.

How it is detected
    The sustained level is the median of the last 20% of logged points, at most 50 (a median, so
    a single spike never decides); a drift also needs a significant upward Mann-Kendall trend
    with the Hamed-Rao correction, over the log or over its last two late windows (a rise late
    in a long flat log is diluted in the whole), or the level at ``rise_factor`` x its early one
    (a rise that has ended is still a drift). The onset is where KL began to climb: the earlier
    of the knot of a two-piece linear fit and the point where KL left its starting level for
    good (a hinge dates a rise that grows by factors where it turned steep). Independently, each
    stretch of logged KL above ``stop_kl`` is an incident: critical when it lasted
    ``sustained_points`` logged points, peaked above ``far_factor`` x ``stop_kl``, or was
    followed by harm (the reward falling or freezing, most groups losing their reward variance,
    the gradient vanishing, NaN); a warning otherwise. Its evidence names the peak, the
    threshold and the step KL came back below it.

False positives
    One-step KL spikes (a bad batch) below ``stop_kl`` are ignored unless they persist; one above
    it that the run shrugs off is a warning, not a critical. KL growing slowly inside the
    normal band is healthy. Frameworks differ in scale (verl's kl_loss sums over
    micro-batches since late 2025): set ``drift_kl`` for your stack if needed.

Remedies
    Adaptive KL (raise beta when KL exceeds a target, e.g. 1.0); a larger fixed beta; a periodic
    reference update (every ~5000 steps); a hard KL cap; at KL > 10 stop, update the reference,
    restart from the last good checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from grpo_doctor.findings import Status
from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.rules import incidents as inc
from grpo_doctor.rules import knobs
from grpo_doctor.rules.base import Outcome, Param, Rule, onset_text
from grpo_doctor.rules.plot import Plot, Threshold, ladder
from grpo_doctor.rules.points import head_tail, late_points, series, snap_to_logged
from grpo_doctor.rules.signals import lr_burst, reward_progress
from grpo_doctor.store import Run
from grpo_doctor.text import fmt, knob_value, step_text
from grpo_doctor.trends import mann_kendall, rolling_median, trend_onset
from grpo_doctor.trends.noise import step_noise

KL = Metric.KL.value
REWARD = Metric.REWARD_MEAN.value

RULE = Rule(
    "kl_drift", "KL drift from the reference",
    requires=(KL,), min_points=8, points="KL values", plot=Plot(metrics=(KL, REWARD)),
    params=(
        Param("drift_kl", 0.5, "sustained KL above this, and rising, is drifting (warning)"),
        Param("adapt_kl", 5.0,
              "sustained KL above this is dangerous (critical with stalled reward)"),
        Param("stop_kl", 10.0,
              "sustained KL above this is critical: stop and update the reference"),
        Param("alpha", 0.01, "significance of the upward trend (Mann-Kendall, Hamed-Rao)"),
        Param("sustained_points", 3, "logged points above stop_kl that make an incident critical"),
        Param("rise_factor", 4.0, "a current KL this many times its early level has risen, "
              "trend or not"),
        Param("far_factor", 10.0, "a KL this many times stop_kl, even once, is critical"),
    ),
)


@RULE.draws
def lines(p: Mapping[str, float], evidence: Mapping[str, object]
          ) -> dict[str, tuple[Threshold, ...]]:
    return {KL: ladder([(p["drift_kl"], f"drifting {fmt(p['drift_kl'])}", "warning"),
                        (p["adapt_kl"], f"dangerous {fmt(p['adapt_kl'])}", "danger"),
                        (p["stop_kl"], f"stop {fmt(p['stop_kl'])}", "critical")], True)}


@RULE.reads_short_logs
def short_log(run: Run, p: Mapping[str, float]) -> Outcome | None:
    """Too short for a trend, not for an incident: KL above the stop line is one at once."""
    early = inc.above(run, KL, "KL", p["stop_kl"], sustained=int(p["sustained_points"]),
                      far=p["far_factor"])
    if not early:
        return None
    return Outcome(inc.worst(early), f"KL incident: {inc.describe(early)}",
                   onset_step=early[0].step,
                   evidence={"threshold": f"KL > {fmt(p['stop_kl'])} (stop)"},
                   remedies=_incident_remedies(run, early), key_metric=KL,
                   incidents=tuple(early))


@RULE.detects
def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    steps, k = series(run, KL)
    k0, kc = head_tail(k, frac=0.2)
    trend = mann_kendall(steps, k)
    smooth = rolling_median(k, 5)
    peak = float(smooth.max())
    evidence: dict[str, object] = {
        "kl_start": round(k0, 6), "kl_now": round(kc, 6), "kl_peak_sustained": round(peak, 6),
        "kl_max_raw": round(float(k.max()), 6), "trend_p": float(f"{trend.p:.3g}"),
        "trend_tau": round(trend.tau, 3),
    }
    # KL is 0 when training starts (policy = reference): a KL already high at the first logged
    # steps drifted before them, so it needs no rising trend.
    # A long flat stretch before a late rise dilutes a whole-log trend test (the Hamed-Rao
    # correction reads the step as autocorrelation): the trend is also tested over the last
    # two late windows, where a rise late in a long log is.
    recent = min(len(k), 2 * late_points(len(k), 0.2, 3))
    recent_trend = mann_kendall(steps[-recent:], k[-recent:]) if recent < len(k) else trend
    # A KL at rise_factor x its early level or more has risen, whether or not it still
    # rises: a rise that ended 200 logged points ago is still a drift, not "not rising".
    rising = (((trend.increasing(p["alpha"]) or recent_trend.increasing(p["alpha"]))
               and kc > k0) or k0 >= p["drift_kl"] or kc >= p["rise_factor"] * k0)
    incidents = inc.above(run, KL, "KL", p["stop_kl"], sustained=int(p["sustained_points"]),
                          far=p["far_factor"])
    if kc >= p["stop_kl"]:
        band, status = f"above {fmt(p['stop_kl'])}, stop", Status.CRITICAL
    elif kc >= p["adapt_kl"]:
        band, status = f"{fmt(p['adapt_kl'])}-{fmt(p['stop_kl'])}, dangerous", Status.WARNING
    elif kc >= p["drift_kl"] and rising:
        band, status = f"{fmt(p['drift_kl'])}-{fmt(p['adapt_kl'])}, drifting", Status.WARNING
    else:
        band, status = "", Status.OK
    remedies = [
        knobs.scale(run, knobs.KL_COEF, 2.0, why="holds the policy closer to its reference",
                    fallback="adaptive KL with target ~1.0"),
        knobs.Remedy("adaptive KL controller: raise beta while KL exceeds a target (e.g. 1.0)",
                     knobs.KL_COEF),
        _reference_update(run),
    ]
    if incidents:
        evidence["incidents"] = len(incidents)
    if status == Status.OK:
        if kc >= p["drift_kl"]:
            text = f"KL {fmt(k0)} -> {fmt(kc)}: elevated but not rising"
        else:
            note = f" (one spike to {fmt(float(k.max()))} did not persist)" if (
                k.max() >= p["drift_kl"] and not incidents) else ""
            text = f"KL {fmt(k0)} -> {fmt(kc)}, within the normal band{note}"
        if not incidents:
            return Outcome(Status.OK, text, evidence=evidence, key_metric=KL)
        first = incidents[0]
        status = inc.worst(incidents)
        evidence["threshold"] = f"KL > {fmt(p['stop_kl'])} (stop)"
        evidence["episodes_only"] = True  # the level itself stayed in the normal band
        summary = f"KL incident: {inc.describe(incidents)}; KL by the end {fmt(kc)}"
        return Outcome(status, summary, onset_step=first.step, evidence=evidence,
                       remedies=_incident_remedies(run, incidents), key_metric=KL,
                       incidents=tuple(incidents))

    knot = _began(steps, k, k0, kc)
    onset = snap_to_logged(run, KL, knot)
    # KL is ~0 at a run's first update (policy = reference). High from the very first step
    # and not rising is an offset between the two, not a drift: a reference of other
    # weights, dtype or quantization (an FP8 policy against a bf16 reference), or the KL
    # estimator.
    # Its first logged points high too: a KL near 0 at step 1 that was at 0.5 a few steps later
    # moved there (read "KL already 0.00136 at step 1 ... differed from the start").
    offset = (run.first_step is not None and run.first_step <= 1 and k0 >= p["drift_kl"]
              and float(np.median(k[:3])) >= p["drift_kl"])
    from_start = offset and not (trend.increasing(p["alpha"]) and kc > k0) and kc < p["adapt_kl"]
    if offset:
        # Began at the first step, whatever it did after: a rise from an offset is dated
        # there (trial 81: a reference built from the untrained init, KL 2.59 at step 1,
        # read "rose from step 8": "beta 0.04 -> 0.08", a tighter leash to the wrong model).
        onset = int(steps[0])  # the reward is judged from there too
    progress = reward_progress(run, float(onset))
    corroboration = []
    if progress.logged and not progress.improving:
        corroboration.append(progress.stalled_words())
    if status == Status.WARNING and kc >= p["adapt_kl"] and corroboration:
        status = Status.CRITICAL
    evidence["band"] = band
    evidence["corroboration"] = corroboration
    evidence["threshold"] = f"sustained KL {band}"
    why = f", {', '.join(corroboration)}" if corroboration else ""
    moved = (f"rose from {fmt(k0)} to {fmt(kc)}" if kc > k0 else
             f"has stayed high ({fmt(k0)} at the start, {fmt(kc)} now)")
    burst = lr_burst(run, int(steps[0])) if offset else None
    if burst is not None:
        # The first updates' step size, not the leash or the reference: a reference reset
        # or a tighter beta would answer a drift that did not happen.
        remedies[:] = [r for r in remedies if "reset the reference" not in str(r)
                       and "update the reference" not in str(r)]
    if offset and burst is None:
        evidence["offset_from_start"] = True
        # The band's name as an offset: "drifting" beside "not a drift" read as a
        # contradiction (helper-67).
        if from_start:
            evidence["band"] = str(band).replace(", drifting", ", an offset").replace(
                ", dangerous", ", a dangerous offset")
        evidence["threshold"] = f"KL >= {fmt(p['drift_kl'])} from the first logged step"
        # An offset is not a drift: a tighter leash (beta, adaptive KL) would pull toward a
        # reference that is itself the problem.
        remedies[:] = [r for r in remedies if "KL coefficient" not in str(r)
                       and "adaptive KL" not in str(r) and "reset the reference" not in str(r)]
        remedies.insert(0, "check the reference model: the same checkpoint, dtype and "
                        "quantization as the policy at step 0 (KL should start near 0); if it "
                        "is, the first updates moved the policy that far: a learning rate too "
                        "large")
    knot = onset
    if incidents:
        status = inc.merge_status(status, inc.worst(incidents))
        onset = min(onset, incidents[0].step)
    summary = f"KL {moved} (band {band}) from step {onset_text(knot, onset)}{why}"
    if offset and burst is not None:
        # The first updates took a learning rate many times the run's later one: they moved
        # the policy that far (KL 469 at step 1 under lr 2e-2), no reference mismatch.
        lr0, lr_after = burst.peak, burst.after
        summary = (f"KL already {fmt(float(k[0]))} at step {step_text(int(steps[0]))}, the "
                   f"first logged ({fmt(k0)} over the first fifth of the log){why}: the first "
                   f"updates, at a learning rate of {knob_value(lr0)} ({lr0 / lr_after:.0f}x "
                   f"the {knob_value(lr_after)} after), moved the policy that far")
    elif from_start:
        summary = (f"KL already {fmt(float(k[0]))} at step {step_text(int(steps[0]))}, the "
                   f"first logged ({fmt(k0)} over the first fifth of the log), and not rising "
                   f"({fmt(kc)} now){why}: policy and reference "
                   "differed from the start (a reference of other weights or precision, or "
                   "first updates that large), not a drift")
    elif offset:
        summary = (f"KL already {fmt(float(k[0]))} at step {step_text(int(steps[0]))}, the "
                   f"first logged, then {fmt(kc)} by the end{why}: policy and "
                   "reference differed from the start (a reference of other weights or "
                   "precision, or first updates that large), before any drift")
    earlier = [i for i in incidents if i.step < knot]
    later = [i for i in incidents if i.step >= knot]
    if earlier:
        summary += f"; earlier KL incident: {inc.describe(earlier, 1)}"
    if later:
        # The one a reader needs is the episode still going on at the end, else the worst.
        shown = next((i for i in reversed(later) if i.recovered_step is None),
                     max(later, key=lambda i: i.peak))
        more = f" (and {len(later) - 1} more)" if len(later) > 1 else ""
        summary += f"; then {shown.summary}{more}"
    if status == Status.CRITICAL and burst is None and not offset:
        remedies.insert(0, "stop, update the reference to the last good checkpoint, restart")
    return Outcome(status, summary, onset_step=onset, evidence=evidence,
                   remedies=tuple(remedies), key_metric=KL, incidents=tuple(incidents))


def _began(steps: np.ndarray, k: np.ndarray, k0: float, kc: float) -> float:
    """Where KL began to climb: the knot of a two-piece fit, or where it left its starting
    level for good when that came earlier and a third of the climb (in factors: KL grows by
    them) was done before the knot. A creep from 0.024 to 0.05 on a plateau is not the start
    of a rise to 2 nats 170 steps later."""
    knot = trend_onset(steps, k, k0, kc)
    left = _left_baseline(steps, k, k0)
    if left >= knot or k0 <= 0 or kc <= k0:
        return min(knot, left)
    smooth = rolling_median(k, 5)
    before = float(smooth[max(int(np.searchsorted(steps, knot)) - 1, 0)])
    done = math.log(max(before, k0) / k0) / math.log(kc / k0)
    return left if done >= 1 / 3 else knot


def _left_baseline(steps: np.ndarray, k: np.ndarray, k0: float) -> float:
    """Where KL left its starting level for good on its way to its peak: the point after the
    last one (5-point median) within three step-to-step swings of that level, or half of it
    again. A hinge fit dates a rise that grows by factors (0.0005, 0.03, 0.1, 0.5, 1.5) where
    it turned visibly steep, a few points after it began."""
    smooth = rolling_median(k, 5)
    head = k[:max(8, len(k) // 10)]
    line = k0 + max(3.0 * step_noise(head), 0.5 * abs(k0), 1e-4)
    peak = int(np.argmax(smooth))
    below = np.flatnonzero(smooth[:peak + 1] <= line)
    return float(steps[min(int(below[-1]) + 1, peak)]) if len(below) else float(steps[0])


def _incident_remedies(run: Run, incidents: list) -> tuple[str, ...]:
    """What to do about KL incidents: a roll-back only for a blow-up the run did not shrug
    off; for a spike it came back from, or spikes that keep recurring, look at those batches."""
    first = incidents[0]
    worst = max(incidents, key=lambda i: i.peak)
    leash = knobs.scale(run, knobs.KL_COEF, 2.0, why="holds the policy closer to its reference",
                        fallback="adaptive KL with target ~1.0")
    if len(incidents) >= 3:
        look = (f"KL spikes keep coming back ({len(incidents)} episodes, up to {fmt(worst.peak)} "
                f"at step {step_text(worst.peak_step)}): inspect those batches (a reward or "
                "verifier bug, rare tokens with huge ratios)")
    elif first.severity is Status.CRITICAL and first.step > (run.first_step or 0):
        look = knobs.rollback(first.step, f"roll back to a checkpoint from before step "
                              f"{step_text(first.step)} and find what blew up there (a bad "
                              "batch, the lr, the reward)")
    else:
        look = (f"look at the batch of step {step_text(first.step)}: one update moved the "
                f"policy far (KL {fmt(first.peak)}) and the run came back")
    return (look, leash, knobs.scale(run, knobs.LEARNING_RATE, 0.5), _reference_update(run))


def _reference_update(run: Run) -> str:
    """A reference update worded for the run's length: periodic on long runs, a reset to a
    good checkpoint on runs shorter than the usual period."""
    span = (run.last_step or 0) - (run.first_step or 0)
    if span >= 10_000:
        return "update the reference policy periodically (e.g. every 5,000 steps)"
    return "reset the reference policy to the last good checkpoint when KL passes the target"
