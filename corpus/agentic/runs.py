"""The agentic runs of trial 41: ``python -m corpus.agentic.runs OUT [NAME ...]`` writes
``OUT/NN_name`` (two at a time) and each run's raw rows to ``OUT/_raw``."""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from corpus.agentic import grpo, stacks
from corpus.agentic.grpo import ACfg

os.environ.setdefault("OMP_NUM_THREADS", "1")
RUNS = [
    ACfg("healthy_verl", seed=1, stack="verl", fmt="tensorboard"),
    ACfg("healthy_trl", seed=2, stack="trl", fmt="wandb"),
    ACfg(
        "tool_spam_per_call_reward",
        seed=3,
        stack="trl",
        fmt="tensorboard",
        weights={"correct": 1.0, "format": 0.2, "tool_call": 0.3},
    ),
    ACfg("no_max_turns", seed=4, stack="nemo", fmt="wandb", max_turns=0),
    ACfg("obs_unmasked", seed=5, stack="verltool", fmt="tensorboard", mask_obs=False),
    ACfg("lr_too_high", seed=6, stack="verl", fmt="wandb", lr=3e-3),
    ACfg("beta0_long", seed=7, stack="searchr1", fmt="wandb", beta=0.0, steps=350),
    ACfg("clip_huge", seed=8, stack="nemo", fmt="tensorboard", eps_low=0.99, eps_high=10.0),
    ACfg("temp_too_low", seed=9, stack="trl", fmt="wandb", temperature=0.3),
    ACfg(
        "tool_always_fails_call_reward",
        seed=10,
        stack="trl",
        fmt="tensorboard",
        tool_fail_rate=1.0,
        weights={"correct": 1.0, "format": 0.2, "call_format": 0.5},
    ),
    ACfg("context_too_short", seed=11, stack="verl", fmt="tensorboard", max_total=5),
    ACfg(
        "correct_weight_0",
        seed=12,
        stack="trl",
        fmt="tensorboard",
        weights={"correct": 0.0, "format": 0.2},
    ),
]


def one(out: Path, i: int, cfg: ACfg) -> tuple[str, str, dict]:
    rows, info = grpo.run(cfg, log=lambda s: print(s, file=sys.stderr, flush=True))
    path = stacks.write(out / f"{i:02d}_{cfg.name}", rows, cfg, f"r{i:02d}")
    (out / "_raw").mkdir(exist_ok=True)
    (out / "_raw" / f"{i:02d}_{cfg.name}.json").write_text(
        json.dumps({"cfg": grpo.to_dict(cfg), "info": info, "rows": rows})
    )
    return cfg.name, str(path), info


if __name__ == "__main__":
    out, want = Path(sys.argv[1]), sys.argv[2:]
    out.mkdir(parents=True, exist_ok=True)
    todo = [(out, i, c) for i, c in enumerate(RUNS, 1) if not want or c.name in want]
    with ProcessPoolExecutor(2) as ex:
        for name, path, info in ex.map(one, *zip(*todo)):
            print("done", name, path, info, flush=True)
