"""Start-up cost of the command line: ``grpo-doctor --help`` and ``grpo-doctor diagnose`` of a
1,000-step CSV, whole processes, plus ``python -X importtime`` for ``--help``.

    python bench/startup_bench.py
    python bench/startup_bench.py --runs 20 --top 25

Targets: ``--help`` <= 0.3 s; ``diagnose`` of a 1k-step CSV <= 1.5 s (whole process).

The command is ``grpo-doctor`` from PATH when it is installed; otherwise the script pip would
generate for the ``grpo-doctor`` entry point (``from grpo_doctor.cli import main;
sys.exit(main())`` under this interpreter, not a pyenv shim) is written to a temp folder and
run with this checkout on PYTHONPATH. Timing uses hyperfine (3 warm-up runs, then ``--runs``)
when it is on PATH, else repeated subprocess runs; both report the best and the median. The
CSV is a synthetic GRPO run with TRL's names (an entropy collapse, reported as a warning).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from _measure import machine

TARGETS = {"--help": 0.3, "diagnose": 1.5}


def command(tmp: Path) -> tuple[list[str], dict[str, str], str]:
    """The grpo-doctor command, its environment, and where it came from."""
    env = dict(os.environ)
    found = shutil.which("grpo-doctor")
    if found:
        return [found], env, found
    script = tmp / "grpo-doctor"
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom grpo_doctor.cli import main\n"
                      "sys.exit(main())\n")
    script.chmod(0o755)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return [str(script)], env, f"entry-point script for {sys.executable} (not installed)"


def write_csv(path: Path, steps: int = 1000) -> None:
    rng = np.random.default_rng(0)
    t = np.arange(1, steps + 1)
    cols = {
        "step": t,
        "train/reward": 0.2 + 0.5 / (1 + np.exp(-(t - steps / 4) / (steps / 10)))
        + rng.normal(0, 0.02, steps),
        "train/entropy": np.exp(-3 * np.clip((t - steps / 2) / (steps / 4), 0, None))
        + np.abs(rng.normal(0, 0.01, steps)),
        "train/kl": 0.01 + 0.2 * t / steps + np.abs(rng.normal(0, 0.01, steps)),
        "train/grad_norm": 0.4 + np.abs(rng.normal(0, 0.05, steps)),
        "train/frac_reward_zero_std": np.clip(0.2 + rng.normal(0, 0.05, steps), 0, 1),
        "train/completions/mean_length": 300 + rng.normal(0, 5, steps),
        "train/loss": rng.normal(0, 0.01, steps),
        "train/learning_rate": np.full(steps, 1e-6),
    }
    names = list(cols)
    rows = np.column_stack([cols[n] for n in names])
    with path.open("w") as fh:
        fh.write(",".join(names) + "\n")
        for r in rows:
            fh.write(f"{int(r[0])}," + ",".join(f"{v:.8g}" for v in r[1:]) + "\n")


def time_hyperfine(cmd: list[str], env: dict[str, str], runs: int) -> list[float]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            ["hyperfine", "--warmup", "3", "--runs", str(runs), "--ignore-failure",
             "--style", "none", "--export-json", out.name, " ".join(cmd)],
            check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return json.loads(Path(out.name).read_text())["results"][0]["times"]


def time_subprocess(cmd: list[str], env: dict[str, str], runs: int) -> list[float]:
    times = []
    for i in range(runs + 3):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if i >= 3:  # warm-up runs first, as hyperfine does
            times.append(time.perf_counter() - t0)
    return times


def importtime(env: dict[str, str], top: int) -> list[tuple[int, int, str]]:
    """(self us, cumulative us, module) of the slowest imports of ``--help``."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "grpo_doctor", "--help"],
                          env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cum_us, name = line[len("import time:"):].split("|")
        rows.append((int(self_us), int(cum_us), name.rstrip()))
    rows.sort(key=lambda r: -r[1])
    return rows[:top]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--top", type=int, default=15, help="import-time rows to print")
    ap.add_argument("--no-hyperfine", action="store_true", help="time with subprocess runs")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="grpo-doctor-startup-") as tmp_name:
        tmp = Path(tmp_name)
        cmd, env, origin = command(tmp)
        csv = tmp / "run-1k.csv"
        write_csv(csv)
        use_hf = shutil.which("hyperfine") is not None and not args.no_hyperfine
        timer = time_hyperfine if use_hf else time_subprocess
        print(f"grpo-doctor: {origin}; timing: "
              f"{'hyperfine' if use_hf else 'subprocess'} (3 warm-up + {args.runs} runs)")
        print(machine())
        cases = [("--help", [*cmd, "--help"]),
                 ("diagnose", [*cmd, "diagnose", str(csv), "--format", "json"])]
        head = (f"{'command':<36s} {'best s':>7s} {'median s':>9s} {'max s':>7s} "
                f"{'target s':>9s} {'met':>4s}")
        print(head)
        print("-" * len(head))
        for label, full in cases:
            times = timer(full, env, args.runs)
            med = statistics.median(times)
            shown = f"grpo-doctor {label}" + (" run-1k.csv" if label == "diagnose" else "")
            print(f"{shown:<36s} {min(times):>7.3f} {med:>9.3f} {max(times):>7.3f} "
                  f"{TARGETS[label]:>9.1f} {'yes' if med <= TARGETS[label] else 'NO':>4s}")
        print(f"\npython -X importtime -m grpo_doctor --help: the {args.top} slowest imports "
              "(cumulative)")
        print(f"{'self ms':>8s} {'cum ms':>8s}  module")
        for self_us, cum_us, name in importtime(env, args.top):
            print(f"{self_us / 1e3:>8.1f} {cum_us / 1e3:>8.1f}  {name}")


if __name__ == "__main__":
    main()
