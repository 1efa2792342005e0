"""Ratio instability: importance ratios leaving their safe range.

What it detects
    The PPO ratio pi/pi_old escaping [0.5, 2] — max above ``max_ratio`` (3) or min below
    ``min_ratio`` (0.3) — on a sustained share of recent steps; a clip fraction above
    ``clip_fraction`` (0.2); and, as its own signal, train-vs-inference mismatch (vLLM vs trainer
    KL, or the importance-sampling ratio of the rollout engine) rising far above its baseline.

Why it matters
    Large ratios on rare tokens are how the LLD death spiral and the train-inference mismatch
    collapses start: the clipped objective stops bounding the update, gradients inflate, and
    entropy surges within a few steps.

How it is detected
    Share of the last 20% of logged steps outside the band, or a burst (half of any
    ``burst_window`` consecutive logged steps outside it; a single excursion never fires);
    for mismatch, the late median against the early median (``mismatch_growth`` times) with a
    significant upward Mann-Kendall trend. Critical when two of these agree, or when the
    grad norm is inflating at the same time. The onset is the first step of the sustained
    excursion (a mean-shift change point).

False positives
    Training-inference "importance sampling ratio" keys are not PPO ratios and are never read as
    such. Ratios of exactly 1 (one PPO epoch, fully on-policy) are healthy.

Remedies
    Fewer PPO epochs per batch, smaller mini-batch updates or a lower learning rate; tighter
    clipping (clip_ratio 0.2) or GSPO / sequence-level ratios; for mismatch (the rollout
    engine's importance ratio above ``is_ratio_max`` or its max below 1 / ``is_ratio_max``: the
    trainer no longer gives the sampled tokens the sampler's probabilities): truncated or masked
    importance sampling (TIS/MIS), fp32 lm_head, matching kernels between rollout and trainer;
    MoE router replay.
"""

from __future__ import annotations

from collections.abc import Mapping

from grpo_doctor.findings import Status
from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.rules import knobs
from grpo_doctor.rules.base import ONSET, Outcome, Param, Rule, Skip
from grpo_doctor.rules.plot import Plot, Threshold, ladder
from grpo_doctor.rules.points import head_tail, late_points, series, snap_to_logged
from grpo_doctor.rules.signals import cispo_cap, rising, two_sided_cap
from grpo_doctor.store import Run
from grpo_doctor.text import fmt
from grpo_doctor.trends import level_shift_onset, mann_kendall

REWARD = Metric.REWARD_MEAN.value

RULE = Rule(
    "ratio_instability", "Importance-ratio instability",
    requires_any=((Metric.RATIO_MAX.value,), (Metric.RATIO_MIN.value,),
                  (Metric.CLIP_FRACTION.value,), (Metric.IS_RATIO_MAX.value,),
                  (Metric.MISMATCH_KL.value,)),
    # every excursion needs 8 points of its metric: fewer, and nothing was checked
    min_points=8, points="ratio, clip-fraction or mismatch values",
    plot=Plot(metrics=(Metric.CLIP_FRACTION.value, REWARD)),
    params=(
        Param("max_ratio", 3.0, "PPO ratio max above this is out of range"),
        Param("min_ratio", 0.3, "PPO ratio min below this is out of range"),
        Param("clip_fraction", 0.2, "clip fraction above this is out of range"),
        Param("is_ratio_max", 5.0, "train-vs-inference importance ratio max above this"),
        Param("mismatch_growth", 10.0, "late/early train-inference mismatch that is out of range"),
        Param("late_share", 0.3, "share of recent steps out of range that fires"),
        Param("burst_window", 10, "logged steps a burst is counted over"),
        Param("burst_share", 0.5, "share of a burst window out of range that fires"),
    ),
)


def _excursion(run: Run, metric: str, out_of_range, label: str, p) -> dict | None:
    steps, v = series(run, metric)
    if len(v) < 8:
        return None
    bad = out_of_range(v).astype(float)
    k = late_points(len(v))
    share = float(bad[-k:].mean())
    # A burst: half of any ``burst_window`` consecutive logged steps out of range (a run can
    # blow its ratios out for a stretch and come back; one excursion never makes a burst).
    w = int(p["burst_window"])
    window_share = np.convolve(bad, np.ones(w) / w, mode="valid") if len(bad) >= w else bad[:0]
    burst = np.nonzero(window_share >= p["burst_share"])[0]
    if share < p["late_share"] and not len(burst):
        return None
    if share >= p["late_share"]:
        # Where the sustained excursion began: the mean shift into it, then its first bad step.
        start = level_shift_onset(steps, bad)[0] if bad[:k].mean() < p["late_share"] \
            else steps[0]
    else:
        start = steps[burst[0]]
    after = np.nonzero((steps >= start) & (bad > 0))[0]
    first_bad = steps[after[0]] if len(after) else start
    return {"signal": label, "late_share": round(share, 3), "metric": metric,
            "burst": bool(len(burst)) and share < p["late_share"],
            "onset": snap_to_logged(run, metric, float(first_bad)),
            "late_median": float(np.median(v[-k:]))}


def _said(hits: list[dict], p: Mapping[str, float]) -> str:
    """The excursions with how much of the log each held: its share of recent steps, or the
    burst that fired it (a burst's share of recent steps may be 0: it was not recent).
    Excursions that held alike are said together ("PPO ratio max > 3 and PPO ratio min < 0.3
    (a burst: ...)"), so no clause repeats."""
    said: dict[str, list[str]] = {}
    for hit in hits:
        if "late_share" not in hit:
            held = ""
        elif hit["burst"]:
            held = (f"a burst: {p['burst_share']:.0%} or more of {int(p['burst_window'])} "
                    "consecutive logged steps")
        else:
            held = f"{hit['late_share']:.0%} of recent steps"
        said.setdefault(held, []).append(str(hit["signal"]))
    return "; ".join(" and ".join(signals) + (f" ({held})" if held else "")
                     for held, signals in said.items())


@RULE.draws
def lines(p: Mapping[str, float], evidence: Mapping[str, object]
          ) -> dict[str, tuple[Threshold, ...]]:
    """Each ratio's out-of-range line, the band beyond it."""
    bounds = ((Metric.RATIO_MAX.value, "max_ratio", True),
              (Metric.RATIO_MIN.value, "min_ratio", False),
              (Metric.CLIP_FRACTION.value, "clip_fraction", True),
              (Metric.IS_RATIO_MAX.value, "is_ratio_max", True))
    return {metric: ladder([(p[name], f"out of range {fmt(p[name])}", "warning")], upward)
            for metric, name, upward in bounds}


#: A sequence-level clip below this is far tighter than GSPO's 3e-4 (its range 1e-4-1e-3):
#: its clip fraction is the setting's harm, not GSPO's design.
_GSPO_CLIP_FLOOR = 3e-5


@RULE.detects
def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    hits = []
    checks = [
        (Metric.RATIO_MAX.value, lambda v: v > p["max_ratio"],
         f"PPO ratio max > {p['max_ratio']:g}"),
        (Metric.RATIO_MIN.value, lambda v: v < p["min_ratio"],
         f"PPO ratio min < {p['min_ratio']:g}"),
        (Metric.CLIP_FRACTION.value, lambda v: v > p["clip_fraction"],
         f"clip fraction > {p['clip_fraction']:g}"),
        (Metric.IS_RATIO_MAX.value, lambda v: v > p["is_ratio_max"],
         f"train-inference IS ratio max > {p['is_ratio_max']:g}"),
        # The mirror image: the largest ratio of the batch far below 1, so that the trainer
        # gives every sampled token a small share of the probability the sampler gave it
        # (trainer and rollout engine no longer hold the same policy).
        (Metric.IS_RATIO_MAX.value, lambda v: v < 1 / p["is_ratio_max"],
         f"train-inference IS ratio max < 1/{p['is_ratio_max']:g}"),
    ]
    logged = list(dict.fromkeys(m for m, _, _ in checks if run.has(m))) + [
        m for m in (Metric.MISMATCH_KL.value,) if run.has(m)]
    if not logged:
        raise Skip("needs ratio_max/min, clip_fraction, is_ratio_max or mismatch_kl")
    capped = cispo_cap(run)
    # A sequence's ratio clipped at GSPO's 1 +- 3e-4 clips a large share of tokens by design
    # (trial 58's control at GSPO's own clip read "ratio instability", lr -> 2.5e-6, and
    # "switch to GSPO"): the clip fraction says nothing of its pace there.
    sequence = knobs.sequence_level(knobs.flatten(run.config) if run.config else {})
    low, _ = knobs.current(run, knobs.CLIP_LOW)
    if sequence and low is not None and 0 < low < _GSPO_CLIP_FLOOR:
        # By construction only near GSPO's own clip: 30x tighter, most of every reused
        # batch is clipped away (trial 70: epsilon 1e-5 under sequence level, 70% clipped
        # over 4 passes, read as large "by construction").
        sequence = None
    delta = two_sided_cap(run)
    if delta is not None:
        # (TRL's delta below 1: the clip metrics count its cap; trial 70.)
        sequence = sequence or f"delta {fmt(delta)}, below 1"
    if (capped is not None or sequence) and logged == [Metric.CLIP_FRACTION.value]:
        why = sequence or "loss_type cispo"
        raise Skip(f"needs ratio_max/min, is_ratio_max or mismatch_kl: under {why} the clip "
                   "fraction is large by construction")
    for metric, test, label in checks:
        if (capped is not None or sequence) and metric == Metric.CLIP_FRACTION.value:
            continue  # clipped by construction: the engine's note names the setting
        hit = _excursion(run, metric, test, label, p)
        if hit:
            hits.append(hit)
    m_steps, mk = series(run, Metric.MISMATCH_KL.value)
    if len(mk) >= 8:
        m0, mc = head_tail(np.abs(mk))
        if m0 > 0 and mc / m0 >= p["mismatch_growth"] and mann_kendall(m_steps, mk).increasing():
            hits.append({"signal": f"train-inference mismatch up {mc / m0:.0f}x",
                         "metric": Metric.MISMATCH_KL.value, "late_median": mc,
                         "onset": snap_to_logged(run, Metric.MISMATCH_KL.value,
                                                 level_shift_onset(m_steps, mk)[0])})
    evidence: dict[str, object] = {"checked": logged}
    if not hits:
        # Said as what was read: a clip fraction alone (TRL logs no ratio) bounds how often
        # the clip acted, not how far the ratios went (up to 17 on a run clipping 2%).
        ratios = [m for m in logged if m in (Metric.RATIO_MAX.value, Metric.RATIO_MIN.value,
                                             Metric.IS_RATIO_MAX.value, Metric.IS_RATIO_MIN.value)]
        text = (f"ratios within range ({', '.join(logged)})" if ratios else
                f"no excursion in {', '.join(logged)} (no ratio logged: how far the ratios "
                "went is not known)")
        return Outcome(Status.OK, text, evidence=evidence, key_metric=logged[0])
    grad = rising(run, Metric.GRAD_NORM.value, 0.01)
    status = Status.CRITICAL if len(hits) >= 2 or grad else Status.WARNING
    onset = min(int(h["onset"]) for h in hits)
    evidence["excursions"] = hits
    evidence["threshold"] = "; ".join(str(h["signal"]) for h in hits)
    if grad:
        evidence["corroboration"] = ["grad norm rising"]
    summary = (f"ratio instability: {_said(hits, p)}"
               + f", from step {ONSET}" + (", with grad norm rising" if grad else ""))
    clip, _ = knobs.current(run, knobs.CLIP_LOW)
    # (Under a clip already tighter than 0.2, "tighter clipping (clip_ratio 0.2)" asked for a
    # clip 100x looser: trial 63's epsilon 0.002.)
    tighter = "" if clip is not None and clip <= 0.2 else " or tighter clipping (clip_ratio 0.2)"
    remedies = (
        "fewer PPO epochs / mini-batches per rollout batch",
        knobs.scale(run, knobs.LEARNING_RATE, 0.5),
        None if sequence else f"sequence-level ratios (GSPO){tighter}",
        "train-inference mismatch: truncated/masked importance sampling, fp32 lm_head",
    )
    return Outcome(status, summary, onset_step=onset, evidence=evidence, remedies=remedies,
                   key_metric=str(hits[0]["metric"]))
