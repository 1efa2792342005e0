"""Generate the corpus: train every run of corpus/runs.py and write its log.

    python -m corpus.tiny_grpo --out tests/fixtures/corpus [--jobs 2] [--only NAME ...]
    python -m corpus.tiny_grpo --set compare --out tests/fixtures/compare --jobs 2
    python -m corpus.label --out tests/fixtures/corpus

Each run is a real GRPO training of a tiny transformer on this CPU (one thread per run).
A manifest (``runs.json``) records every run's path, format, config and timing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def _one(idx: int, name: str, out: str, run_set: str = "corpus") -> dict:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    from corpus import grpo, writers
    from corpus.runs import RUN_SETS

    torch.set_num_threads(1)
    cfg = next(c for c in RUN_SETS[run_set] if c.name == name)
    rows, info = grpo.run(cfg, log=lambda s: print(s, file=sys.stderr, flush=True))
    folder = f"{idx:02d}_{cfg.name}"
    run_dir = Path(out) / folder
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_id = f"r{idx:02d}" + "".join(ch for ch in cfg.name.lower() if ch.isalnum())[:20]
    path = writers.write(run_dir, rows, cfg, run_id)
    return {
        "name": cfg.name,
        "run": str(path.relative_to(out)),
        "format": cfg.fmt,
        "framework_names": cfg.framework,
        "intent": cfg.intent,
        "what_was_done": cfg.what,
        "config": cfg.to_dict(),
        "framework_config": writers.framework_config(cfg),
        "seconds": info["seconds"],
        "steps_logged": info["steps_logged"],
        "crashed_at": info["crashed_at"],
        "error": info["error"],
        "pretrain_eval_acc": info["pretrain_eval_acc"],
    }


def main(argv: list[str] | None = None) -> int:
    from corpus.runs import RUN_SETS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="tests/fixtures/corpus")
    ap.add_argument("--jobs", type=int, default=1, help="parallel runs (at most 2)")
    ap.add_argument("--only", nargs="*", help="run names to (re)generate")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--set", dest="run_set", choices=sorted(RUN_SETS), default="corpus",
                    help="the labeled corpus (default) or the compare fixtures")
    args = ap.parse_args(argv)
    RUNS = RUN_SETS[args.run_set]
    if args.list:
        for i, c in enumerate(RUNS, 1):
            print(f"{i:02d} {c.name:28s} {c.framework:5s} {c.fmt:14s} {c.intent}")
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "runs.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    todo = [(i, c.name) for i, c in enumerate(RUNS, 1) if not args.only or c.name in args.only]
    t0 = time.time()
    jobs = max(1, min(2, args.jobs))
    with ProcessPoolExecutor(max_workers=jobs) as ex:
        futs = {ex.submit(_one, i, n, str(out), args.run_set): n for i, n in todo}
        for fut, n in futs.items():
            rec = fut.result()
            manifest[n] = rec
            print(f"done {n}: {rec['seconds']}s, {rec['steps_logged']} steps, "
                  f"crashed_at={rec['crashed_at']} -> {rec['run']}", flush=True)
    order = {c.name: i for i, c in enumerate(RUNS)}
    manifest = {k: manifest[k] for k in sorted(manifest, key=lambda k: order.get(k, 999))
                if k in order or "excerpt_of" in manifest[k]}  # excerpts: corpus/excerpts.py
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"total {time.time() - t0:.0f}s for {len(todo)} runs", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
