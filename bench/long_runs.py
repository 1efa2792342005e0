"""Long logs, read live: does a level read over a long log cry wolf, and how soon is a late
failure called?

    python -m corpus.tiny_grpo --set long --out DIR --jobs 2     # about 5 minutes
    python bench/long_runs.py DIR [--polls 300]

The runs (corpus/runs.py LONG_RUNS) are 1,500 steps, 6x the corpus's: two healthy, two whose
learning rate jumps at step 1,000 (a scheduler restarted wrongly). Each log is read as
``watch`` reads it, a prefix at a time (``--polls`` evenly spaced prefixes), and once whole.
Per run it prints:
  healthy   the findings raised at some poll, per severity (a live false alarm), and the
            status of the whole log
  jump      the first poll after the jump raising a finding (or a severity) the poll before
            did not, and the steps it took; the first alert after it the whole log's
            diagnosis dates (found by bisection on prefixes); the root cause and first action
Exit 0 always: a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grpo_doctor.engine import diagnose
from grpo_doctor.importers import load_runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="where corpus.tiny_grpo --set long wrote")
    ap.add_argument("--polls", type=int, default=300)  # every 5th step: a 20-step alert shows
    args = ap.parse_args()
    manifest = json.loads((args.folder / "runs.json").read_text())
    for entry in manifest.values():
        run = load_runs(args.folder / entry["run"])[0]
        cfg = entry["config"]
        jump = cfg["warmup"] if cfg.get("schedule") == "jump" else None
        steps = np.asarray(run.steps)
        polls = sorted({int(steps[i]) for i in np.linspace(7, len(steps) - 1, args.polls)
                        .round().astype(int)})
        raised: dict[str, dict[str, int]] = {"critical": {}, "warning": {}}
        first_after = None
        shown: set[tuple[str, str]] = set()  # (mode, severity) raised at the previous poll
        for step in polls:
            now = {(c.mode, c.status.value)
                   for c in diagnose(run.truncated(step), with_first_alert=False).findings}
            for mode, severity in sorted(now):
                raised[severity].setdefault(mode, step)
            new = now - shown
            if jump is not None and step > jump and first_after is None and new:
                first_after = (", ".join(f"{m} {s}" for m, s in sorted(new)), step)
            shown = now
        whole = diagnose(run)
        print(f"{entry['name']} ({len(steps)} logged steps): whole log {whole.status}")
        if jump is None:
            for severity, modes in raised.items():
                said = ", ".join(f"{m} at {s}" for m, s in sorted(modes.items(),
                                                                    key=lambda x: x[1]))
                print(f"  live {severity}: {said or 'none'}")
            continue
        before = {m for modes in raised.values() for m, s in modes.items() if s <= jump}
        print(f"  lr jumps at step {jump}; raised before it: {', '.join(sorted(before)) or 'none'}")
        if first_after is not None:
            mode, step = first_after
            print(f"  first poll raising a new finding or severity after it: {mode} at {step} "
                  f"(+{step - jump})")
        alerts = sorted((c.first_alert_step, c.mode) for c in whole.findings
                        if c.first_alert_step is not None and c.first_alert_step > jump)
        if alerts:
            step, mode = alerts[0]
            print(f"  first alert after it (bisection): {mode} at {step} (+{step - jump})")
        print(f"  root cause: {whole.root_cause.mode if whole.root_cause else None}; first "
              f"action: {whole.root_cause.first_action if whole.root_cause else '-'}")


if __name__ == "__main__":
    main()
