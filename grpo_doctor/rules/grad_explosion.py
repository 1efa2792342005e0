"""Gradient explosion: the gradient norm spiking or inflating.

What it detects
    Gradient-norm spikes of ``spike_ratio`` (5x) or more over the trailing median that recur or
    do not recover, a sustained inflation of the level to ``sustained_ratio`` times its
    post-warm-up baseline, and bursts anywhere in the run's history, the first logged steps
    included: ``burst_points`` or more consecutive logged norms at ``burst_ratio`` x the run's
    own level (its upper quartile) or more, ending abruptly, or a shorter spike that high
    followed by harm (the reward falling or freezing, the gradient vanishing, NaN), or logged
    with KL in the chapter's dangerous band (5 or more, twice its level before): a warning the
    moment it is logged, critical once harm follows, no finding once ``JUDGED`` logged points
    show the run shrugged it off.

Why it matters
    A sudden 5x+ spike is the classic "about to collapse" signal: it precedes NaN losses and
    the entropy surge of the LLD death spiral, and in tool-integrated runs it is the mark of
    train-inference mismatch on low-probability tokens.

How it is detected
    Robust z-scores (median/MAD of the trailing ``window`` points, on log scale) above
    ``z_threshold`` that are also at least ``spike_ratio`` x the trailing median. Only past
    points are used, so a spike is called the moment it is logged. Warm-up (the first
    ``warmup_fraction`` of the log) is ignored. It fires on ``recurring_spikes`` spikes within
    ``recurrence_window`` of the run, on a spike the norm does not come back from, or on the
    level inflating (to at least ``min_inflated_norm``). A spike after which the norm returns
    to its baseline is recovered (ok).
    Steps whose norm is 0 or nearly (under 1% of its 90th percentile: every group of the
    batch had equal rewards, no gradient) are no level and are left out. A burst is judged
    against the upper quartile of the whole log (so a burst at the first logged steps, before
    any baseline, is compared with what came after); it is an incident even when the run
    recovered: critical above ``far_ratio`` x the level or when harm followed (NaN, the reward
    falling or freezing), a warning otherwise. A log with too few norms for a level is still
    critical at a norm of ``absurd_norm`` (1e4) or more.

False positives
    One early spike that the run shrugs off is common in healthy runs; it is not an alarm.
    Heavy-tailed but stationary norms do not inflate the median and do not fire. Under a
    clip the config sets, pre-clip norms up to 5x it that nothing followed (a norm that
    grows as the policy sharpens, many iterations per batch) are the clip at work.

Remedies
    Clip gradients (max_grad_norm 1.0); lower the learning rate; check train-inference mismatch
    (truncated or masked importance sampling, fp32 lm_head); NaN guards.
"""

from __future__ import annotations

from collections.abc import Mapping

from grpo_doctor.findings import Incident, Status
from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.rules import incidents as inc
from grpo_doctor.rules import knobs
from grpo_doctor.rules.base import ONSET, Outcome, Param, Rule, Skip, onset_text
from grpo_doctor.rules.plot import Plot, Threshold, ladder, number
from grpo_doctor.rules.points import series
from grpo_doctor.store import Run
from grpo_doctor.text import fmt, plural
from grpo_doctor.trends import level_shift_onset, robust_spikes
from grpo_doctor.trends.episodes import stretches_above

GRAD = Metric.GRAD_NORM.value
REWARD = Metric.REWARD_MEAN.value

#: Logged points after a spike that show whether harm followed (``inc.aftermath`` needs 3).
JUDGED = 3

RULE = Rule(
    "grad_explosion", "Gradient explosion",
    requires=(GRAD,), plot=Plot(metrics=(GRAD, REWARD), spikes="spike_steps"),
    params=(
        Param("spike_ratio", 5.0, "a spike is at least this many times the trailing median"),
        Param("z_threshold", 6.0, "robust z (log scale) a spike must exceed"),
        Param("window", 20, "trailing points the baseline is taken over"),
        Param("warmup_fraction", 0.05, "share of the log at its start that is ignored"),
        Param("sustained_ratio", 5.0, "late median over baseline that counts as inflation"),
        Param("min_inflated_norm", 1.0, "an inflated late median below this is no explosion "
              "(under the usual clip of 1.0: no update is larger for it)"),
        Param("recurring_spikes", 3, "spikes (after warm-up) within recurrence_window that make a "
              "pattern"),
        Param("recurrence_window", 0.15, "share of the logged span the recurring spikes fall in"),
        Param("burst_ratio", 10.0, "a burst is at least this many times the run's own level"),
        Param("burst_points", 3, "consecutive logged points a burst must last"),
        Param("far_ratio", 100.0, "a burst this many times the run's level is critical"),
        Param("absurd_norm", 1e4, "a norm this large is critical however few norms are logged"),
    ),
)


@RULE.draws
def lines(p: Mapping[str, float], evidence: Mapping[str, object]
          ) -> dict[str, tuple[Threshold, ...]]:
    """The baseline, and ``sustained_ratio`` (warning) and twice it (critical) times it; for
    a burst alone, the line it crossed."""
    base = number(evidence, "baseline")
    line = number(evidence, "burst_line")
    if (base is None or base <= 0) and line is not None and line > 0:
        return {GRAD: (Threshold(line, f"burst line {fmt(line)}", "critical"),)}
    if base is None or base <= 0:
        return {}
    r = p["sustained_ratio"]
    return {GRAD: (Threshold(base, f"baseline {fmt(base)}", "info"),
                   *ladder([(r * base, f"{fmt(r)}x baseline", "warning"),
                            (2 * r * base, f"{fmt(2 * r)}x baseline", "critical")], True))}


#: A configured clip at or above this clips nothing (TRL's, verl's "off" is 0 or a huge value).
_CLIP_OFF = 1e3
#: Pre-clip norms up to this many times an active clip, with nothing after them, are the
#: clip at work (a norm that grows as the policy sharpens); spikes beyond it stay a finding
#: (a repetition penalty's 13.9 under a clip of 1.0, trial 48).
_WITHIN_CLIP = 5.0
#: Pre-clip norms this many times an active clip over a run's first logged points: the norm
#: was out of scale from the start (a setup problem: dropout on, a reward's scale), whatever
#: spikes came later (healthy runs log 0.1-5x the usual clip of 1). Against the usual clip of
#: 1 at least: a healthy 0.74 under max_grad_norm 0.01 is the clip's choice, not a norm out of
#: scale (h119).
_FAR_ABOVE_CLIP = 50.0
_HEAD_POINTS = 5
#: A gradient norm at or above this is a gradient, never a step "without gradient".
_NO_GRADIENT = 0.1


@RULE.detects
def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    steps, g = series(run, GRAD, reduce="max")
    # A norm of (nearly) 0 is a step without gradient (all groups equal), not a level: with
    # most groups equal, the median of every step would be one of them.
    # (Relative to the 90th percentile, but never above _NO_GRADIENT: a norm of 0.8 is a
    # gradient, whatever came after it; norms of 0.8 then 5e4 had read "steady around 50,000,
    # about 0 on 40 steps".)
    flowing = g > max(0.0, min(1e-2 * float(np.quantile(g, 0.9)), _NO_GRADIENT)) if len(
        g) else g > 0
    # A step whose every group had equal rewards has no policy gradient (its norm is the KL
    # term's alone, 0.004): no level for a learning step's norm (trial 73: norms of 1-7 where
    # a reward at 0 on 96% of steps first paid read "exploding against a baseline of 0.0044").
    alike = flowing & _no_signal(run, steps)
    every = (steps[flowing], g[flowing])  # (an absurd norm is one, signal or none; h103)
    zero = int((~flowing).sum())
    flowing &= ~alike
    g_steps, g = steps[flowing], g[flowing]
    if len(g) < 8:
        # Too few norms for a level; but a norm no model trains through needs none.
        found = inc.above(run, GRAD, "grad norm", p["absurd_norm"], sustained=1, far=1.0,
                           points=every) if len(every[1]) else []
        # Nor does one update that broke the run: after it the norm is often 0 (every group
        # equal), so the norms before it may be all the log will ever have.
        threshold = f"grad norm >= {fmt(p['absurd_norm'])}"
        if not found and len(g) >= 3:
            found = _harmful_spikes(run, g_steps, g, p, [])
            threshold = (f"one norm >= {fmt(p['burst_ratio'])}x its level before followed by "
                         f"harm or logged with KL >= {fmt(inc.DANGEROUS_KL)}")
        if found:
            return Outcome(inc.worst(found), f"gradient norm exploding: {inc.describe(found)}",
                           onset_step=found[0].step,
                           evidence={"threshold": threshold, "bursts": len(found)},
                           remedies=_remedies(run), key_metric=GRAD, incidents=tuple(found))
        n = len(steps)
        why = (f", and it was 0 on {zero} of {n}" if zero else "") + (
            f"{' and' if zero else ', and'} every group had equal rewards (no policy gradient) "
            f"on {int(alike.sum())} of {n}" if alike.any() else "")
        raise Skip(f"needs at least 8 logged non-zero grad-norm values{why}")
    bursts = _bursts(run, g_steps, g, p)
    bursts = sorted(bursts + _harmful_spikes(run, g_steps, g, p, bursts), key=lambda i: i.step)
    warm = max(3, int(round(len(g) * p["warmup_fraction"])))
    spikes = robust_spikes(g, window=int(p["window"]), z_threshold=p["z_threshold"],
                           ratio_threshold=p["spike_ratio"])
    idx = spikes.index[spikes.index >= warm]
    ratios = spikes.ratio[spikes.index >= warm]
    post = g[warm:]
    positive = post[post > 0]
    baseline = float(np.median(positive[: max(3, len(positive) // 5)])) if len(positive) else 0.0
    k = max(3, int(round(len(g) * 0.2)))
    late = float(np.median(g[-k:]))
    inflation = late / baseline if baseline > 0 else 1.0
    evidence: dict[str, object] = {
        "baseline": round(baseline, 6), "late_median": round(late, 6),
        "inflation": round(inflation, 3), "spikes": len(idx),
        "spike_steps": [int(g_steps[i]) for i in idx[:10]],
        "spike_ratios": [round(float(r), 2) for r in ratios[:10]],
    }
    # A spike is unrecovered when the 5+ points after it stay above 2x the pre-spike baseline;
    # a spike too recent to judge is not called on its own (recurrence or NaN will be).
    # And above the values the norm took just before it (their 90th percentile): 0.547 back to
    # 0.008 on a run logging 0.003-0.012 between its rare mixed groups, or 579 back to 0.6
    # after norms of 0.5-18, is recovered, however small the median level was.
    unrecovered = []
    for i in idx:
        # The level after it, the next spikes left out: a second spike soon after is
        # recurrence (judged below), not a level that stayed up (0.28, 1.86, 0.95, 0.56, 0.26
        # after a 1.84 on a run logging 0.2-0.6 had read "unrecovered").
        following = np.arange(i + 1, min(len(g), i + 1 + max(5, len(g) // 20)))
        after = g[following[~np.isin(following, idx)]]
        before = g[max(0, i - 20):i]
        usual = float(np.quantile(before, 0.9)) if len(before) >= 5 else 0.0
        # (A spike under the usual clip of 1.0 explodes nothing: "exploding" beside a peak of
        # 0.547 read as an alarm about a norm no clip would touch.)
        if len(after) >= 5 and np.median(after) > max(2 * spikes.baseline[i], usual) and (
                g[i] >= p["min_inflated_norm"]):
            unrecovered.append(int(i))
    # Recurring: several spikes close together (sporadic spikes a run recovers from are not).
    n_rec = int(p["recurring_spikes"])
    span = float(g_steps[-1] - g_steps[0]) if len(g_steps) > 1 else 0.0
    window = max(p["recurrence_window"] * span, 20 * float(np.median(np.diff(g_steps))))
    spike_steps = g_steps[idx]
    recurring = len(idx) >= n_rec and bool(np.any(
        spike_steps[n_rec - 1:] - spike_steps[: len(spike_steps) - n_rec + 1] <= window))
    # A level that grew from 0.07 to 0.6 is a symptom of something else (the policy
    # changing fast), not an explosion: the usual clip at 1.0 never acts on it.
    inflated = inflation >= p["sustained_ratio"] and late >= p["min_inflated_norm"]
    if zero:
        evidence["zero_steps"] = zero
    if bursts:
        evidence["bursts"] = len(bursts)
    if not (unrecovered or recurring or inflated):
        note = (f"; {plural(len(idx), 'spike')} (max {fmt(max(ratios))}x) recovered" if len(idx)
                else "")
        if zero:
            note += f"; about 0 (no gradient) on {plural(zero, 'logged step')}"
        if not bursts:
            return Outcome(Status.OK, f"grad norm steady around {fmt(baseline)}{note}",
                           evidence=evidence, key_metric=GRAD)
        evidence["threshold"] = (f"{int(p['burst_points'])}+ logged norms >= "
                                 f"{fmt(p['burst_ratio'])}x the run's level, or one norm "
                                 f">= {fmt(p['burst_ratio'])}x its level before followed by "
                                 f"harm or logged with KL >= {fmt(inc.DANGEROUS_KL)}")
        evidence["episodes_only"] = True  # the level itself stayed steady
        # The burst's own numbers, not the steady level's: "baseline 17.3, inflation 0.037x"
        # under "18x the non-zero norms before it (0.202)" read as a contradiction (the
        # run's median, after the burst, held the norms of a broken policy).
        for key in ("baseline", "late_median", "inflation", "spikes", "spike_steps",
                    "spike_ratios"):
            evidence.pop(key, None)
        worst = max(bursts, key=lambda i: i.peak)
        evidence.update(peak=round(worst.peak, 6), peak_step=worst.peak_step,
                        burst_line=round(worst.threshold, 6) if worst.threshold else None)
        summary = f"gradient-norm burst: {inc.describe(bursts)}"
        return Outcome(inc.worst(bursts), summary, onset_step=bursts[0].step,
                       evidence=evidence, remedies=_remedies(run), key_metric=GRAD,
                       incidents=tuple(bursts))
    first_i = (idx[0] if len(idx) else
               int(np.argmax(g > baseline * p["sustained_ratio"])))
    if inflated and not recurring and len(idx) and idx[0] not in unrecovered:
        # The level rose later than an isolated first spike the norm came back from: the
        # finding (its inflation) began with the rise (a spike at step 78 the control run
        # logs too had dated a level that rose with a reward hack at 118: trial 51).
        shift, level_before, level_after = level_shift_onset(g_steps, g)
        rise = int(np.searchsorted(g_steps, shift))
        if level_after >= p["sustained_ratio"] * max(level_before, baseline) and rise > idx[0]:
            later = [i for i in idx if i >= rise - 2]
            first_i = later[0] if later and later[0] <= rise + 2 else rise
    onset = int(g_steps[first_i])
    later_nan = any(
        len(s) and s.max() >= onset
        for m, s in run.nan_steps.items()
        if m in (Metric.LOSS.value, GRAD, Metric.KL.value)
    )
    clip, _ = knobs.current(run, knobs.GRAD_CLIP)
    peak_seen = float(g.max())
    if (clip is not None and 0 < clip < _CLIP_OFF and not bursts and not later_nan
            and peak_seen <= _WITHIN_CLIP * clip and not inc.aftermath(run, onset)):
        # Pre-clip norms under a clip the config sets: each update was bounded, and nothing
        # followed (trial 64: 12-16 iterations per batch log a low early norm, 0.3, and an
        # ordinary later 1-5 under max_grad_norm 1.0 had read "unrecovered spike", the lr
        # first; issue 23: such spikes are a finding only when something followed them).
        evidence["clip"] = clip
        return Outcome(Status.OK, f"pre-clip grad norm up to {fmt(peak_seen)} against a "
                       f"baseline of {fmt(baseline)} under max_grad_norm {fmt(clip)}: the "
                       "updates were clipped, and nothing followed", evidence=evidence,
                       key_metric=GRAD)
    scaled = _with_reward_scale(run, g_steps, g) if (
        clip is not None and 0 < clip < _CLIP_OFF and not bursts and not later_nan) else None
    if scaled is not None:
        # The norm rose with the reward's own scale (a reward model or function changed, its
        # scale reaching the gradient unnormalised), each update clipped, and nothing followed
        # (trial 79: reward x100 from step 151 under scale_rewards none, the norm 0.38 -> 110
        # pre-clip, the run learning on; read critical, "roll back to checkpoint-50, lr").
        at, factor, level_before, level_after = scaled
        evidence.update(clip=clip, reward_scale_step=at, reward_scale_factor=round(factor, 3))
        return Outcome(Status.OK, f"pre-clip grad norm {fmt(level_before)} -> "
                       f"{fmt(level_after)} from step {at}, where the reward's scale rose "
                       f"{fmt(factor)}x; under max_grad_norm {fmt(clip)} the updates were "
                       "clipped, and nothing followed (normalise the reward per group, TRL's "
                       "scale_rewards, if its scale is not meant to change)",
                       evidence=evidence, key_metric=GRAD)
    corroboration = []
    if later_nan:
        corroboration.append("NaN followed")
    if inflated:
        corroboration.append(f"level inflated {fmt(inflation)}x")
    if recurring:
        corroboration.append(f"{len(idx)} spikes")
    status = Status.CRITICAL if (later_nan or (inflated and (recurring or unrecovered))
                                 or inflation >= 2 * p["sustained_ratio"]) else Status.WARNING
    evidence["threshold"] = (f"spike >= {fmt(p['spike_ratio'])}x trailing median" if len(idx)
                             else f"late median >= {fmt(p['sustained_ratio'])}x baseline")
    evidence["corroboration"] = corroboration
    peak = float(g[idx].max()) if len(idx) else float(g.max())
    earliest = min(onset, bursts[0].step) if bursts else onset  # an earlier burst is the onset
    top = int(np.argmax(g))
    # The spikes' peak is not always the log's largest norm (trial 48: a spike of 9.75 at
    # step 9 named "peak" beside 22.3 at step 63 on a level already raised): both are said.
    largest = (f" (the largest logged: {fmt(float(g[top]))} at step {int(g_steps[top])})"
               if float(g[top]) > 1.05 * peak else "")
    # Not recovered in the points after it, but by the end (a norm up through a length hack,
    # back to 0.29 against a baseline of 0.67: "unrecovered" read against its own numbers).
    spike_words = ("unrecovered spike" if late > 2 * baseline else
                   f"a spike the norm stayed up after, back to a median {fmt(late)} by the end")
    summary = (f"gradient norm exploding: {', '.join(corroboration) or spike_words}; "
               f"peak {fmt(peak)}{largest} against a baseline of {fmt(baseline)}, from step "
               f"{onset_text(onset, earliest)}")
    head = g[:_HEAD_POINTS]
    if (clip is not None and 0 < clip < _CLIP_OFF and len(head) >= 3 and onset > g_steps[0]
            and float(np.median(head)) >= _FAR_ABOVE_CLIP * max(clip, 1.0)):
        # Far above the clip from the first logged norms: the finding began there, not at the
        # later spikes its sentence counts (trial 79: dropout left on, pre-clip norms 330x a
        # clip of 1 from step 1, dated at step 123).
        first_level = float(np.median(head))
        earliest = onset = int(g_steps[0])
        evidence["far_above_clip_from_start"] = round(first_level, 6)
        summary = (f"gradient norm exploding: {', '.join(corroboration) or spike_words}; "
                   f"peak {fmt(peak)}{largest} against a baseline of {fmt(baseline)}; pre-clip "
                   f"norms already {fmt(first_level)} from step {ONSET} "
                   f"({fmt(first_level / clip)}x max_grad_norm {fmt(clip)}): every update "
                   "clipped hard from the start")
    if bursts:
        status = inc.merge_status(status, inc.worst(bursts))
        onset = earliest
        summary += f"; burst: {inc.describe(bursts, 1)}"
    return Outcome(status, summary, onset_step=onset, evidence=evidence, remedies=_remedies(run),
                   key_metric=GRAD, incidents=tuple(bursts))


#: A reward whose typical size grew this many times at one step changed its scale there.
_REWARD_SCALE_JUMP = 10.0


def _with_reward_scale(run: Run, g_steps: np.ndarray, g: np.ndarray
                       ) -> tuple[int, float, float, float] | None:
    """(step, reward scale factor, norm level before, after) where the gradient norm's level
    rose at most as many times as the reward's typical size did at the same step (within a
    few logged points), and nothing followed the rise; None otherwise."""
    # Only where the config passes the reward's scale on to the advantage (TRL's
    # scale_rewards none/false): a group-normalised reward cannot inflate the gradient, and a
    # 0/1 reward rising from near 0 is learning, not a scale (h117).
    # An absent key is no "none": TRL's default is "group", and verl and OpenRLHF have no such
    # key (h118: an absent scale_rewards had excused a real explosion, read HEALTHY).
    scaling = knobs.keyed(knobs.flatten(run.config or {}), "scale_rewards")
    if scaling is None or knobs.as_flag(scaling) is not False:
        return None
    rs, r = series(run, Metric.REWARD_MEAN.value)
    if len(r) < 20 or len(g) < 20:
        return None
    shift, before, after = level_shift_onset(g_steps, g)
    if before <= 0 or after <= before:
        return None
    i = int(np.searchsorted(rs, shift))
    if i < 10 or len(r) - i < 10:
        return None
    size_before = float(np.median(np.abs(r[max(0, i - 20):max(0, i - 2)])))
    size_after = float(np.median(np.abs(r[i + 2:i + 22])))
    if size_before <= 0 or size_after < _REWARD_SCALE_JUMP * size_before:
        return None
    factor = size_after / size_before
    if after / before > 3 * factor or inc.aftermath(run, int(rs[i])) or inc.crashes(
            run, Metric.REWARD_MEAN.value, "reward", share=0.6, within=5):
        return None  # (a crash anywhere after: something followed; h117)
    return int(rs[i]), factor, before, after


def _no_signal(run: Run, steps: np.ndarray) -> np.ndarray:
    """Per grad-norm step, whether every group had equal rewards there (the zero-std share
    logged as 1): a step with no advantage to follow."""
    zs, z = series(run, Metric.ZERO_STD_FRACTION.value)
    return np.isin(steps, zs[z >= 1.0 - 1e-9])


def _remedies(run: Run) -> tuple[str | None, ...]:
    return (
        knobs.clip_gradients(run),
        knobs.scale(run, knobs.LEARNING_RATE, 0.5),
        "check train-inference mismatch: truncated/masked importance sampling, fp32 lm_head",
    )


def _bursts(run: Run, steps: np.ndarray, g: np.ndarray, p: Mapping[str, float]):
    """Stretches of ``burst_points``+ norms at ``burst_ratio`` x the run's level (its upper
    quartile) or more that end abruptly (a norm decaying smoothly from a high start is not a
    burst)."""
    # The level the run shows when it learns: the upper quartile, so that steps where most
    # groups had equal rewards (a tiny norm) do not drag it down.
    level = float(np.quantile(g, 0.75))
    threshold = p["burst_ratio"] * level
    episodes = []
    for ep in stretches_above(g, threshold):
        if ep.length > 0.2 * len(g):
            continue
        if ep.recovered is not None and g[ep.recovered] > 0.5 * g[ep.end]:
            continue  # a slope down through the threshold, not a fall from a burst
        if ep.length < p["burst_points"] and not inc.aftermath(run, int(steps[ep.end])):
            continue  # a lone spike the run shrugged off (healthy runs have them)
        episodes.append(ep)
    return inc.above(run, GRAD, "grad norm", threshold, sustained=10**9,
                     far=p["far_ratio"] / p["burst_ratio"], episodes=episodes, points=(steps, g))


def _harmful_spikes(run: Run, steps: np.ndarray, g: np.ndarray, p: Mapping[str, float],
                    known: list) -> list:
    """Single norms ``burst_ratio`` x the level of the flowing norms logged just before them
    (at least two of the last ten) after which the run came to harm (``inc.aftermath``): one
    update that broke the run, critical. Or logged with KL in the chapter's dangerous band
    (``inc.alongside``): a warning the moment it is logged, until ``JUDGED`` points after it
    can show harm. A spike the run shrugged off is no finding (healthy runs have them); nor
    is one inside a burst already found."""
    out = []
    taken = {i.step for i in known}
    all_steps, all_g = series(run, GRAD, reduce="max")
    for i in range(2, len(g)):
        before = g[max(0, i - 10):i]
        level = float(np.median(before))
        if level <= 0 or g[i] < p["burst_ratio"] * level or int(steps[i]) in taken:
            continue
        nxt = all_g[all_steps > steps[i]][:1]
        if len(nxt) and nxt[0] >= p["burst_ratio"] * level:
            continue  # not a single update: a burst (judged by _bursts)
        step = int(steps[i])
        harm, with_it = inc.aftermath(run, step), inc.alongside(run, step)
        # The KL beside it raises it at once; JUDGED logged points with no harm after it say
        # the run shrugged it off (the KL finding keeps the episode).
        if not harm and not (with_it and np.sum(run.steps > step) < JUDGED):
            continue
        # The norms logged as 0 between (zero-variance batches) are not its level: said so,
        # or "18x its level before (0.202)" read against four logs of 0 just before.
        idle = int(np.sum((all_steps > steps[i - 1]) & (all_steps < step) & (all_g == 0)))
        level_words = (f"the non-zero norms before it ({fmt(level)}; the last "
                       f"{idle} logged were 0)" if idle else f"its level before ({fmt(level)})")
        summary = (f"one update at step {step}: grad norm {fmt(float(g[i]))}, "
                   f"{g[i] / level:.0f}x {level_words}")
        if with_it:
            summary += f", with {', '.join(with_it)}"
        if harm:
            summary += f"; then {', '.join(harm)}"
        out.append(Incident(
            metric=GRAD, step=step, peak_step=step, peak=float(g[i]),
            threshold=float(p["burst_ratio"] * level), recovered_step=None,
            summary=summary, severity=Status.CRITICAL if harm else Status.WARNING))
        break  # the first one broke the run; what follows is its aftermath
    return out
