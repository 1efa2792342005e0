"""How often grpo-doctor's calls are right, and how early: recall, false alarms, lead time.

    python bench/accuracy.py [--corpus tests/fixtures/corpus] [--real ../shared/real-runs]

The real runs are read from --real, else $GRPO_DOCTOR_REAL_RUNS, else ../shared/real-runs
beside the checkout (as the tests read them); when they are not there it says so and scores
the corpus alone.

Scores every labeled run of a corpus folder (its ``labels.json``, written by corpus/label.py)
and of the shared real runs (labels in bench/real_runs_labels.json, transcribed from their
README). Per failure mode it prints:
  recall      labeled (run, mode) pairs the diagnosis flagged (warning or critical)
  false alarm healthy runs on which the mode fired, critical and warning counted apart
  lead time   labeled step - first_alert_step of the same mode (median), and the share of
              labeled steps the same mode's first alert came at or before; a labeled step
              comes from an objective rule, never from the tool. A corpus label's step is where
              its condition began (the first step of a 10-step window, say), which a live
              monitor can only see later; so the labeling rule is also replayed live, on each
              prefix of the log, and the first alert is compared with the step at which the
              labeling rule itself could first have called it ("label live")
  verdicts    how many healthy runs were called healthy and how many inconclusive, and
              whether runs labeled too short to judge were called inconclusive
  live        the healthy runs polled as a live monitor would (a prefix of the log at 40
              evenly spaced steps): how many raised a critical, or a warning, at some poll
Thresholds are the chapter's defaults: nothing is fitted to the runs being scored.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grpo_doctor.engine import diagnose
from grpo_doctor.errors import GrpoDoctorError
from grpo_doctor.importers import load_runs
from grpo_doctor.store import Run


# Objective rules for the step at which a labeled failure became manifest.
def _first(run: Run, metric: str, test) -> int | None:
    if metric not in run.frame:
        return None
    col = run.frame[metric]
    hit = col[test(col.to_numpy(), col)]
    return int(hit.index[0]) if len(hit) else None


def step_rule(run: Run, rule: str) -> int | None:
    if rule == "first_nan":
        steps = [int(v[0]) for v in run.nan_steps.values() if len(v)]
        inf = [int(run.frame.index[np.isinf(run.frame[c].to_numpy())][0])
               for c in run.frame.columns if np.isinf(run.frame[c].to_numpy()).any()]
        return min(steps + inf) if steps or inf else None
    if rule == "entropy_below_10pct":
        col = run.frame.get("entropy")
        if col is None or col.dropna().empty:
            return None
        start = float(col.dropna().iloc[:3].median())
        return _first(run, "entropy", lambda a, c: (a < 0.1 * start))
    if rule == "kl_above_0.5":
        return _first(run, "kl", lambda a, c: (c.rolling(3, min_periods=3).median() > 0.5
                                                 ).to_numpy())
    if rule == "kl_above_10":  # the chapter's stop threshold, at any logged step
        return _first(run, "kl", lambda a, c: a > 10)
    if rule == "reward_below_half_peak":
        # the first step after the peak of the 3-point rolling mean from which it stays below
        # half-way between its start and its peak
        col = run.frame.get("reward_mean")
        if col is None or col.dropna().empty:
            return None
        r = col.dropna().rolling(3, min_periods=1).mean()
        peak = int(np.argmax(r.to_numpy()))
        half = (float(r.iloc[peak]) + float(r.iloc[:3].mean())) / 2
        after = r.iloc[peak:]
        above = np.nonzero(after.to_numpy() >= half)[0]
        k = int(above[-1]) + 1 if len(above) else 0
        return int(after.index[k]) if k < len(after) else None
    raise ValueError(rule)


def label_live_steps(entry: dict) -> dict[str, int]:
    """For a corpus run: per labeled mode, the first logged step whose prefix of the log
    already makes the labeling rule (corpus/label.py) fire, found by replaying it on prefixes
    (a coarse scan, then bisection, as grpo-doctor finds its own first alerts)."""
    from corpus.label import READERS, canonical, label

    series = READERS[entry["format"]](entry["path"])
    steps = sorted({s for v in series.values() for s in v})

    def fired(upto: int) -> set[str]:
        cut = {k: {s: x for s, x in v.items() if s <= upto} for k, v in series.items()}
        return set(label(canonical({k: v for k, v in cut.items() if v}))["modes"])

    out = {}
    for mode in entry["modes"]:
        grid = sorted(set(np.linspace(0, len(steps) - 1, min(len(steps), 24)).round()
                          .astype(int)))
        lo, hi = -1, None
        for idx in grid:
            if mode in fired(steps[idx]):
                hi = idx
                break
            lo = idx
        if hi is None:
            continue
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if mode in fired(steps[mid]) else (mid, hi)
        out[mode] = steps[hi]
    return out


#: Polls of a live monitor over a healthy run's log (evenly spaced, from its 8th point).
LIVE_POLLS = 40


def live_alarms(run: Run) -> dict[str, set[str]]:
    """The findings a live monitor would have raised on ``run`` at some poll: a prefix of the
    log diagnosed as ``watch`` does, at ``LIVE_POLLS`` evenly spaced steps; per severity."""
    out: dict[str, set[str]] = {"critical": set(), "warning": set()}
    steps = run.steps
    for step in steps[8::max(1, len(steps) // LIVE_POLLS)]:
        for c in diagnose(run.truncated(int(step)), with_first_alert=False).findings:
            out[c.status.value].add(c.mode)
    return out


def load_labels(corpus: Path | None, real: Path | None) -> list[dict]:
    entries = []
    if corpus and (corpus / "labels.json").is_file():
        data = json.loads((corpus / "labels.json").read_text())
        for e in data if isinstance(data, list) else data.get("runs", []):
            path = Path(e["run"]) if Path(e["run"]).is_absolute() else corpus / e["run"]
            if not path.exists():
                path = ROOT / e["run"]
            entries.append({"path": path, "healthy": e.get("healthy"), "modes": e.get("modes", {}),
                            "source": "corpus", "too_short": e.get("too_short"),
                            "format": e.get("format"),
                            "collapse_step": e.get("accuracy_collapse_step")})
    if real and real.is_dir():
        data = json.loads((ROOT / "bench" / "real_runs_labels.json").read_text())
        for e in data["runs"]:
            entries.append({**e, "path": real / e["path"], "source": "real"})
    return entries


def default_real_runs() -> Path:
    """Where the real runs are, as tests/helpers.py finds them."""
    return Path(os.environ.get("GRPO_DOCTOR_REAL_RUNS", ROOT.parent / "shared" / "real-runs"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=ROOT / "tests" / "fixtures" / "corpus")
    ap.add_argument("--real", type=Path, default=default_real_runs())
    ap.add_argument("--verbose", "-v", action="store_true")
    args = ap.parse_args()
    if not args.real.is_dir():
        print(f"real runs not found at {args.real} (set GRPO_DOCTOR_REAL_RUNS or --real): "
              "scoring the corpus only")

    hits: dict[str, list[bool]] = defaultdict(list)
    leads: dict[str, list[int]] = defaultdict(list)
    early: dict[str, list[bool]] = defaultdict(list)
    early_live: dict[str, list[bool]] = defaultdict(list)
    false_crit: dict[str, int] = defaultdict(int)
    false_warn: dict[str, int] = defaultdict(int)
    healthy_runs = 0
    verdicts: dict[str, int] = defaultdict(int)  # status of the runs labeled healthy
    too_short: list[tuple[str, str]] = []  # (run, status) of runs labeled too short to judge
    unread = []
    # Lead over the true-task collapse (held-out accuracy staying below half its peak): the
    # first alert of any finding against it. This is the chapter's promise: likelihood and
    # entropy lead, reward and accuracy lag.
    collapse_leads: list[int] = []
    # Whether the labeling rule itself, replayed live, calls at or before its own labeled step:
    # what a monitor that sees no future can reach on "alert <= label" at best.
    ceiling: list[bool] = []
    # Healthy runs as a live monitor polls them: the runs where some poll raised a finding.
    live_false: dict[str, list[str]] = defaultdict(list)
    live_modes: dict[str, set[str]] = defaultdict(set)
    collapses = 0
    for e in load_labels(args.corpus, args.real):
        if e["healthy"] is None and not e["modes"]:
            continue
        try:
            runs = load_runs(e["path"])
        except GrpoDoctorError as exc:
            if not e.get("optional"):
                unread.append(f"{e['path']}: {exc}")
            continue
        if not e.get("all_runs"):
            runs = runs[:1]
        for run in runs:
            d = diagnose(run)
            if e.get("too_short"):
                too_short.append((run.name, d.status))
                continue
            if e["healthy"]:
                verdicts[d.status] += 1
                healthy_runs += 1
                for c in d.findings:
                    (false_crit if c.status.value == "critical" else false_warn)[c.mode] += 1
                if args.verbose and d.findings:
                    print(f"  false alarm on {run.name}: "
                          f"{[(c.mode, c.status.value) for c in d.findings]}")
                raised = live_alarms(run)
                for level, modes in raised.items():
                    if modes:
                        live_false[level].append(run.name)
                        live_modes[level].update(modes)
                if args.verbose and any(raised.values()):
                    print(f"  live alarm on {run.name}: {dict(raised)}")
                continue
            collapses += e.get("collapse_step") is not None
            if e.get("collapse_step") is not None and d.findings:
                first = min(c.first_alert_step for c in d.findings
                            if c.first_alert_step is not None)
                collapse_leads.append(int(e["collapse_step"]) - first)
            live = label_live_steps(e) if e["source"] == "corpus" and e["modes"] else {}
            for mode, spec in e["modes"].items():
                check = d.check(mode)
                hits[mode].append(check.fired)
                label_step = spec.get("step")
                if label_step is None and spec.get("step_rule"):
                    label_step = step_rule(run, spec["step_rule"])
                if args.verbose:
                    print(f"  {e['source']} {run.name[:50]} {mode}: {check.status.value} "
                          f"alert={check.first_alert_step} label_step={label_step} "
                          f"label_live={live.get(mode, '-')}")
                if check.fired and label_step is not None and check.first_alert_step is not None:
                    leads[mode].append(int(label_step) - int(check.first_alert_step))
                    early[mode].append(check.first_alert_step <= int(label_step))
                    # real runs' step rules are already the step a condition holds at
                    live_step = live.get(mode, label_step if e["source"] == "real" else None)
                    if live_step is not None:
                        early_live[mode].append(check.first_alert_step <= int(live_step))
                        ceiling.append(int(live_step) <= int(label_step))

    modes = sorted(set(hits) | set(false_crit) | set(false_warn))
    print(f"{'mode':26s} {'recall':>12s} {'false crit':>10s} {'false warn':>10s} "
          f"{'median lead':>12s} {'alert <= label':>14s} {'<= label live':>13s}")
    all_hits, all_leads = [], []
    for m in modes:
        h = hits.get(m, [])
        all_hits += h
        all_leads += leads.get(m, [])
        rec = f"{sum(h)}/{len(h)} ({sum(h) / len(h):.0%})" if h else "–"
        lead = f"{statistics.median(leads[m]):+.0f}" if leads.get(m) else "–"
        er = f"{sum(early[m])}/{len(early[m])}" if early.get(m) else "–"
        el = f"{sum(early_live[m])}/{len(early_live[m])}" if early_live.get(m) else "–"
        print(f"{m:26s} {rec:>12s} {false_crit.get(m, 0):>10d} {false_warn.get(m, 0):>10d} "
              f"{lead:>12s} {er:>14s} {el:>13s}")
    if all_hits:
        share = sum(all_hits) / len(all_hits)
        print(f"\noverall recall {sum(all_hits)}/{len(all_hits)} ({share:.0%}); "
              f"healthy runs {healthy_runs}: {sum(false_crit.values())} critical, "
              f"{sum(false_warn.values())} warning alarms; median lead time "
              f"{statistics.median(all_leads) if all_leads else float('nan'):+.0f} steps "
              f"over {len(all_leads)} labeled onsets")
    all_early = [x for v in early.values() for x in v]
    if all_early:
        print(f"kind-matched first alert at or before the labeled step: {sum(all_early)}/"
              f"{len(all_early)} ({sum(all_early) / len(all_early):.0%}); the labeling rule "
              f"itself, replayed live, is there on {sum(ceiling)}/{len(ceiling)}")
    all_live = [x for v in early_live.values() for x in v]
    if all_live:
        print(f"kind-matched first alert at or before the labeling rule's own live call: "
              f"{sum(all_live)}/{len(all_live)} ({sum(all_live) / len(all_live):.0%})")
    if healthy_runs:
        print(f"healthy runs polled live ({LIVE_POLLS} polls over each log): "
              + "; ".join(f"{len(live_false[level])} raised a {level} at some poll"
                          + (f" ({', '.join(sorted(live_modes[level]))})"
                             if live_modes[level] else "")
                          for level in ("critical", "warning")))
    print("healthy runs called: " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
    if too_short:
        ok = sum(1 for _, status in too_short if status == "inconclusive")
        print(f"runs too short to judge called inconclusive: {ok}/{len(too_short)}"
              + "".join(f"\n  {name}: {status}" for name, status in too_short
                        if status != "inconclusive"))
    if collapse_leads:
        before = sum(x > 0 for x in collapse_leads)
        print(f"true-task collapses (held-out accuracy below half its peak for good): "
              f"{len(collapse_leads)} of {collapses} flagged; first alert a median "
              f"{statistics.median(collapse_leads):+.0f} steps before the collapse; "
              f"{before}/{len(collapse_leads)} flagged before it")
    for u in unread:
        print("could not read:", u)


if __name__ == "__main__":
    main()
