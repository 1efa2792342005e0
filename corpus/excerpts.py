"""Excerpts of corpus runs: logs that begin late or end early, as users paste them.

    python -m corpus.excerpts --out tests/fixtures/corpus

Cuts steps out of runs already in the corpus (read back from their written files with
``corpus.label``'s readers, keys kept as the framework wrote them) into a CSV each, and adds
them to ``runs.json`` so ``corpus.label`` labels them like any run. No training happens here.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from corpus.label import READERS

#: name -> (source run, first step, last step, what it shows)
EXCERPTS = {
    "excerpt_healthy_s1_first6": (
        "healthy_s1", 1, 6, "the first 6 logged steps of healthy_s1: too short to judge"),
    "excerpt_low_temperature_150_166": (
        "low_temperature", 150, 166,
        "steps 150-166 of low_temperature: entropy already near 0 when the excerpt begins"),
}


def _cell(v: float | None) -> str:
    if v is None:
        return ""
    if math.isnan(v):
        return "nan"
    return repr(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf")


def write_excerpt(out: Path, manifest: dict, name: str) -> dict:
    source, first, last, what = EXCERPTS[name]
    rec = manifest[source]
    series = READERS[rec["format"]](out / rec["run"])
    keys = sorted(series)
    steps = sorted({s for v in series.values() for s in v if first <= s <= last})
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "metrics.csv"
    lines = [",".join(["step", *keys])]
    lines += [",".join([str(s), *(_cell(series[k].get(s)) for k in keys)]) for s in steps]
    path.write_text("\n".join(lines) + "\n")
    return {**rec, "name": name, "run": f"{name}/metrics.csv", "format": "csv",
            "intent": "too_short" if len(steps) < 10 else rec["intent"],
            "what_was_done": what, "excerpt_of": source, "steps_logged": len(steps),
            "crashed_at": None, "seconds": 0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="tests/fixtures/corpus")
    args = ap.parse_args(argv)
    out = Path(args.out)
    manifest_path = out / "runs.json"
    manifest = json.loads(manifest_path.read_text())
    for name in EXCERPTS:
        manifest[name] = write_excerpt(out, manifest, name)
        print(f"wrote {manifest[name]['run']} ({manifest[name]['steps_logged']} steps)")
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
