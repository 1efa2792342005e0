"""Wide-CSV import speed: grpo-doctor's CSV importer vs ``pandas.read_csv(engine="pyarrow")``
alone, side by side on the same file in the same run.

    python bench/csv_bench.py                      # 1M rows x 30 columns
    python bench/csv_bench.py --rows 100000        # a quicker check

Target: grpo-doctor within 1.5x of ``pandas.read_csv(engine="pyarrow")``.

The file has a ``step`` column and 29 metrics with TRL's names (train/reward, train/kl, ...),
values with 8 decimals (about 9 significant digits, as loggers print them), and two sparse
columns (an eval metric every 100 steps, a learning rate every 10) whose other cells are
empty. It is written once with pyarrow and cached under
``$TMPDIR/grpo-doctor-bench/csv-<rows>x<cols>.csv``.

Readers, each in a fresh subprocess with its modules imported before the clock starts:

* ``grpo-doctor``: ``grpo_doctor.load_runs(file)`` (format detection, pyarrow's CSV reader,
  logged NaN kept apart from empty cells, step column detected, canonical names mapped,
  ``build_run``): the run's frame;
* ``pandas.read_csv(engine="pyarrow")``: the frame pandas gives, nothing else;
* ``pyarrow.csv.read_csv``: the Arrow table alone (the parse both of the above start from).

Wall and CPU seconds are best of ``--repeat``; pyarrow parses on all cores, so CPU seconds can
exceed wall seconds. Peak is the resident-set high-water mark above the level before the read.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _measure import machine, measure, run_worker

READERS = ("grpo-doctor", 'pandas.read_csv(engine="pyarrow")', "pyarrow.csv.read_csv")
NAMES = [
    "train/reward", "train/reward_std", "train/kl", "train/entropy", "train/grad_norm",
    "train/loss", "train/learning_rate", "train/frac_reward_zero_std",
    "train/completions/mean_length", "train/completions/max_length",
    "train/completions/clipped_ratio", "train/clip_ratio/region_mean",
    "train/clip_ratio/low_mean", "train/clip_ratio/high_mean",
    "train/rewards/accuracy_reward/mean", "train/rewards/format_reward/mean",
    "train/rewards/accuracy_reward/std", "train/rewards/format_reward/std",
    "train/num_tokens", "train/epoch", "eval/reward",
]


def columns(n_cols: int) -> list[str]:
    names = ["step", *NAMES]
    names += [f"extra/metric_{i:02d}" for i in range(n_cols - len(names))]
    return names[:n_cols]


def write_csv(path: Path, n_rows: int, n_cols: int) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(0)
    names = columns(n_cols)
    arrays: dict[str, Any] = {"step": pa.array(np.arange(1, n_rows + 1))}
    for j, name in enumerate(names[1:]):
        walk = np.cumsum(rng.normal(0, 0.01, n_rows)) + rng.uniform(-1, 1)
        values = pa.array(np.round(walk, 8))
        if name == "eval/reward":
            values = pa.array(np.where(np.arange(n_rows) % 100 == 0, walk, np.nan),
                              from_pandas=True)
        elif name == "train/learning_rate":
            values = pa.array(np.where(np.arange(n_rows) % 10 == 0, 1e-6 * (1 + j), np.nan),
                              from_pandas=True)
        arrays[name] = values
    table = pa.table(arrays)
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as fh:
        fh.write((",".join(names) + "\n").encode())
        pacsv.write_csv(table, fh, pacsv.WriteOptions(include_header=False,
                                                      quoting_style="none"))
    tmp.replace(path)


def csv_file(cache: Path, n_rows: int, n_cols: int, rewrite: bool) -> Path:
    path = cache / f"csv-{n_rows}x{n_cols}.csv"
    if rewrite or not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        write_csv(path, n_rows, n_cols)
    return path


# --- readers (inside a worker process) --------------------------------------------------------


def _prepare(reader: str) -> None:
    import pandas as pd
    import pyarrow.csv  # noqa: F401

    pd.DataFrame(np.zeros((2, 2)), columns=["a", "b"])  # pandas' own lazy imports
    if reader == "grpo-doctor":
        from grpo_doctor.importers import registry

        registry()


def _read(reader: str, path: Path) -> Any:
    if reader == "grpo-doctor":
        from grpo_doctor import load_runs

        return load_runs(path)[0].frame
    if reader.startswith("pandas"):
        import pandas as pd

        return pd.read_csv(path, engine="pyarrow")
    import pyarrow.csv as pacsv

    return pacsv.read_csv(path)


def worker(reader: str, path: Path, repeat: int) -> None:
    _prepare(reader)
    out, res = measure(lambda: _read(reader, path), repeat)
    res["shape"] = [out.num_rows, out.num_columns] if hasattr(out, "num_rows") else list(
        out.shape)
    print(json.dumps(res))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--cols", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3, help="runs per reader (best kept)")
    ap.add_argument("--readers", nargs="+", default=list(READERS), choices=READERS)
    ap.add_argument("--cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "grpo-doctor-bench")
    ap.add_argument("--rewrite", action="store_true", help="write the CSV again")
    ap.add_argument("--worker", nargs=2, metavar=("READER", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], Path(args.worker[1]), args.repeat)
        return

    path = csv_file(args.cache, args.rows, args.cols, args.rewrite)
    print(f"CSV: {args.rows:,d} rows x {args.cols} columns, {path.stat().st_size / 1e6:.0f} MB; "
          f"{machine()}")
    results = [(r, run_worker(__file__, [r, str(path), "--repeat", str(args.repeat)]))
               for r in args.readers]
    ref = next((res for r, res in results if r.startswith("pandas") and "error" not in res),
               None)
    head = (f"{'reader':<36s} {'shape':>14s} {'wall s':>7s} {'cpu s':>7s} {'M cells/s':>9s} "
            f"{'x pandas':>8s} {'peak MiB':>9s}")
    print(head)
    print("-" * len(head))
    for reader, res in results:
        if "error" in res:
            print(f"{reader:<36s} error: {res['error']}")
            continue
        shape = f"{res['shape'][0]:,d}x{res['shape'][1]}"
        rate = args.rows * args.cols / res["seconds"] / 1e6
        ratio = f"{res['seconds'] / ref['seconds']:>8.2f}" if ref else f"{'-':>8s}"
        print(f"{reader:<36s} {shape:>14s} {res['seconds']:>7.2f} {res['cpu']:>7.2f} "
              f"{rate:>9.1f} {ratio} {res['peak_bytes'] / 2**20:>9.0f}")
    print("x pandas: wall seconds / pandas.read_csv(engine='pyarrow')'s; grpo-doctor's shape "
          "is its frame (the step is the index). target: grpo-doctor <= 1.5x pandas")


if __name__ == "__main__":
    main()
