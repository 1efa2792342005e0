"""TensorBoard import speed and memory: grpo-doctor's importer vs tbparse vs EventAccumulator,
side by side on the same event files in the same run.

    python bench/tensorboard_bench.py                       # 7 layouts, 50 tags x 20k steps
    python bench/tensorboard_bench.py --rounds 3            # medians of 3 rounds
    python bench/tensorboard_bench.py --layouts hf --readers grpo-doctor tbparse
    python bench/tensorboard_bench.py --steps 2000          # a quicker check (100k points)

Targets: grpo-doctor >= 30x tbparse on the HF layout (1M points) with CRCs verified;
multi-value events no slower per point than one-value ones; a peak memory <= 3x the float64
frame it returns (steps x tags x 8 bytes).

Layouts, 1M points each (50 tags x 20,000 steps), as the writers users have write them:

* ``uniform``: tensorboardX ``add_scalar`` (``simple_value``), tags ``train/metric_00`` ..
  ``train/metric_49``, all one name length, steps from 0;
* ``hf``: ``add_scalar`` as the HF Trainer's ``TensorBoardCallback`` calls it for TRL's
  GRPOTrainer (torch.utils.tensorboard writes the same bytes as tensorboardX): one value per
  event, TRL's metric names under ``train/`` (many name lengths), global steps from 1, so the
  step varint grows at 128 and 16,384 (the headline layout);
* ``two_lengths``: the same with tags ``train/m0`` .. ``train/m49`` (ten names of 8 bytes,
  forty of 9), the file issue 18 measured;
* ``multi``: every tag of a step in one event (TF1's ``merge_all`` + ``add_summary``),
  written with tensorboard's ``EventFileWriter``;
* ``restart``: the ``hf`` layout in two files, the run stopped at 60% and resumed from the
  checkpoint at 50% (the first file's overlapping values differ; the later ones are expected);
* ``float_val``: tensorboard's own ``tensorboard.summary.Writer.add_scalar`` (a tensor with
  ``float_val`` and the scalars plugin on every event), TRL's names;
* ``tensor_content``: the TF2 layout (``tf.summary.scalar``: a tensor with 4 raw
  ``tensor_content`` bytes, plugin metadata on a tag's first event only), TRL's names,
  written with tensorboard's ``EventFileWriter``.

Files are cached under ``$TMPDIR/grpo-doctor-bench/tb-<tags>x<steps>/<layout>/`` (writing 1M
points takes one to two minutes per layout); ``--rewrite`` writes them again.

Readers, each timed in a fresh subprocess (modules imported before the clock starts), given
the layout's folder:

* ``grpo-doctor``: ``grpo_doctor.load_runs(folder)`` (format detection, TFRecord framing with
  both CRCs verified, decoding, pivot, ``build_run``): a wide float64 frame;
* ``tbparse``: ``tbparse.SummaryReader(folder).scalars`` (its long frame; tbparse parses in
  ``__init__``);
* ``EventAccumulator``: ``event_accumulator.EventAccumulator(folder, size_guidance={'scalars':
  0, 'tensors': 0})``, ``Reload()``, then ``Scalars(tag)`` for every tag into a wide frame;
* on the tensor layouts also ``tbparse .tensors`` and ``EventAccumulator Tensors`` (+
  ``tensor_util.make_ndarray`` per event): the routes a user has to find when ``.scalars`` /
  ``Scalars`` come back empty.

``--rounds N`` runs every comparison N times; the table shows medians (ratios are taken
within each round, then their median). Peak memory is the resident-set high-water mark above
the resident set just before the read (``/proc/self/clear_refs`` resets it; ``ru_maxrss``
above the post-import level where that is not allowed), so it counts C allocations
(protobuf, pyarrow) that tracemalloc cannot see, and it includes the returned frame itself.
"pts ok" says how many points came back with the value written (float32 compare) out of the
points written; a reader returning duplicates (tbparse on the restart) counts each once.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _measure import machine, measure, run_worker

VARIANTS = ("simple", "float_val", "tensor_content")
READERS = ("grpo-doctor", "tbparse", "EventAccumulator")
TENSOR_READERS = ("tbparse .tensors", "EventAccumulator Tensors")


# --- data -------------------------------------------------------------------------------------

# What TRL's GRPOTrainer logs through the HF Trainer's TensorBoardCallback ("train/" + the keys
# of its metrics dict, in that order), with enough reward functions to make ``n_tags`` names.
_TRL_HEAD = ["loss", "grad_norm", "learning_rate", "num_tokens", "completions/mean_length",
             "completions/min_length", "completions/max_length", "completions/clipped_ratio",
             "completions/mean_terminated_length", "completions/min_terminated_length",
             "completions/max_terminated_length"]
_TRL_TAIL = ["reward", "reward_std", "frac_reward_zero_std", "kl", "entropy",
             "clip_ratio/low_mean", "clip_ratio/low_min", "clip_ratio/high_mean",
             "clip_ratio/high_max", "clip_ratio/region_mean", "epoch"]
_REWARD_FUNCS = ["accuracy_reward", "format_reward", "tag_count_reward",
                 "reasoning_steps_reward", "cosine_scaled_reward", "repetition_penalty_reward",
                 "length_penalty_reward", "code_reward", "soft_overlong_punishment",
                 "equation_reward_func", "xmlcount_reward_func", "int_reward_func",
                 "strict_format_reward_func", "correctness_reward_func"]


def tag_names(layout: str, n_tags: int) -> list[str]:
    if layout == "uniform":
        return [f"train/metric_{i:02d}" for i in range(n_tags)]
    if layout == "two_lengths":
        return [f"train/m{i}" for i in range(n_tags)]
    funcs = [*_REWARD_FUNCS, *(f"reward_func_{i}" for i in range(n_tags))]
    rewards = [f"rewards/{f}/{s}" for f in funcs for s in ("mean", "std")]
    n_rewards = max(n_tags - len(_TRL_HEAD) - len(_TRL_TAIL), 0)
    names = [*_TRL_HEAD, *rewards[:n_rewards], *_TRL_TAIL][:n_tags]
    return ["train/" + n for n in names]


def first_step(layout: str) -> int:
    """The HF Trainer logs from global step 1; the uniform file starts at 0."""
    return 0 if layout == "uniform" else 1


def expected_values(n_tags: int, n_steps: int) -> np.ndarray:
    """The float32 values written: steps x tags random walks."""
    rng = np.random.default_rng(0)
    walk = np.cumsum(rng.normal(0, 0.01, (n_steps, n_tags)), axis=0)
    return (walk + rng.uniform(-1, 1, n_tags)).astype(np.float32)


def _write_add_scalar(folder: Path, tags: list[str], vals: np.ndarray, step0: int,
                      suffix: str = "") -> None:
    """tensorboardX ``add_scalar``: the bytes torch.utils.tensorboard's ``add_scalar`` writes
    too (``simple_value``, wall_time, step), which the HF Trainer's TensorBoardCallback, TRL
    and verl's TensorBoard logger call once per metric."""
    from tensorboardX import SummaryWriter

    w = SummaryWriter(str(folder), max_queue=10_000, flush_secs=3600, filename_suffix=suffix)
    add = w.add_scalar
    for s, row in enumerate(vals.tolist(), start=step0):
        for tag, v in zip(tags, row):
            add(tag, v, s)
    w.close()


def _write_multi(folder: Path, tags: list[str], vals: np.ndarray, step0: int) -> None:
    """One event per step holding every tag's ``simple_value`` (TF1's ``merge_all`` +
    ``FileWriter.add_summary``), written with tensorboard's ``EventFileWriter``."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    w = EventFileWriter(str(folder), max_queue_size=10_000, flush_secs=3600)
    t0 = time.time()
    for s, row in enumerate(vals.tolist(), start=step0):
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=t, simple_value=v)
                                             for t, v in zip(tags, row)])
        w.add_event(event_pb2.Event(wall_time=t0 + s * 0.01, step=s, summary=summary))
    w.close()


def _write_float_val(folder: Path, tags: list[str], vals: np.ndarray, step0: int) -> None:
    import tensorboard.summary as tbs

    w = tbs.Writer(str(folder))
    add = w.add_scalar
    for s, row in enumerate(vals.tolist(), start=step0):
        for tag, v in zip(tags, row):
            add(tag, v, s)
    w.close()


def _write_tensor_content(folder: Path, tags: list[str], vals: np.ndarray, step0: int) -> None:
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, types_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    w = EventFileWriter(str(folder), max_queue_size=10_000, flush_secs=3600)
    scalars = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"),
        data_class=summary_pb2.DataClass.DATA_CLASS_SCALAR,
    )
    t0 = time.time()
    raw = vals.astype("<f4")
    for i in range(raw.shape[0]):
        s = step0 + i
        for j, tag in enumerate(tags):
            ev = event_pb2.Event(wall_time=t0 + s * 0.01, step=s)
            value = ev.summary.value.add(tag=tag)
            value.tensor.CopyFrom(tensor_pb2.TensorProto(
                dtype=types_pb2.DT_FLOAT, tensor_content=raw[i, j].tobytes()))
            if i == 0:  # TF2 writes the plugin metadata on a tag's first event only
                value.metadata.CopyFrom(scalars)
            w.add_event(ev)
    w.close()


def _write_restart(folder: Path, tags: list[str], vals: np.ndarray, step0: int) -> None:
    """A run that stopped at 60% of its steps and was resumed from the checkpoint at 50%:
    two ``add_scalar`` files whose steps overlap; the first file's overlapping values differ
    (the later file's are the ones expected back)."""
    n = len(vals)
    stop, resume = n * 6 // 10, n // 2
    first = vals[:stop].copy()
    first[resume:] += 1.0
    _write_add_scalar(folder, tags, first, step0, ".1")
    _write_add_scalar(folder, tags, vals[resume:], step0 + resume, ".2")


# layout -> (writer, how it was written)
LAYOUTS = {
    "uniform": (_write_add_scalar, "tensorboardX add_scalar, one value per event, "
                "tags train/metric_00..49 (one name length)"),
    "hf": (_write_add_scalar, "add_scalar as the HF Trainer / TRL TensorBoardCallback writes: "
           "one value per event, TRL's tag names (many lengths), steps from 1"),
    "two_lengths": (_write_add_scalar, "hf layout with tags train/m0..m49 (two name lengths: "
                    "ten of 8 bytes, then 9 bytes)"),
    "multi": (_write_multi, "every tag of a step in one event (TF1 merge_all + add_summary), "
              "TRL's tag names"),
    "restart": (_write_add_scalar, "hf layout in two files: stopped at 60%, resumed from the "
                "50% checkpoint"),
    "float_val": (_write_float_val, "tensorboard.summary.Writer.add_scalar (tensor float_val, "
                  "plugin metadata on every event), TRL's tag names"),
    "tensor_content": (_write_tensor_content, "TF2 tf.summary.scalar layout (tensor_content, "
                       "metadata on a tag's first event only), TRL's tag names"),
}
LAYOUTS["restart"] = (_write_restart, LAYOUTS["restart"][1])
TENSOR_LAYOUTS = ("float_val", "tensor_content")


def event_folder(cache: Path, layout: str, n_tags: int, n_steps: int, rewrite: bool) -> Path:
    """The cached folder of ``layout``'s event file(s) (written first if missing)."""
    folder = cache / f"tb-{n_tags}x{n_steps}" / layout
    done = folder / "DONE"
    if rewrite or not done.exists():
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        t0 = time.perf_counter()
        LAYOUTS[layout][0](folder, tag_names(layout, n_tags), expected_values(n_tags, n_steps),
                           first_step(layout))
        print(f"  wrote {layout}: {n_tags * n_steps:,d} points in "
              f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
        done.write_text("ok")
    return folder


# --- readers (run inside a worker process) ----------------------------------------------------


def _prepare(reader: str) -> None:
    """Import what ``reader`` needs, so its first call does not pay for imports."""
    import pandas as pd

    pd.DataFrame(np.zeros((2, 2)), columns=["a", "b"])  # pandas' own lazy imports (pyarrow)

    if reader == "grpo-doctor":
        import crc32c  # noqa: F401
        from tensorboard.compat.proto import event_pb2  # noqa: F401

        import grpo_doctor.importers.tensorboard  # noqa: F401
        from grpo_doctor.importers import registry

        registry()
    elif reader.startswith("tbparse"):
        import tbparse  # noqa: F401
    else:
        from tensorboard.backend.event_processing import event_accumulator  # noqa: F401
        from tensorboard.util import tensor_util  # noqa: F401


def _read(reader: str, path: Path) -> Any:
    if reader == "grpo-doctor":
        from grpo_doctor import load_runs

        return load_runs(path)[0]  # its frame, with canonical column names
    if reader == "tbparse":
        from tbparse import SummaryReader

        return SummaryReader(str(path)).scalars
    if reader == "tbparse .tensors":
        from tbparse import SummaryReader

        return SummaryReader(str(path)).tensors
    import pandas as pd
    from tensorboard.backend.event_processing import event_accumulator

    ea = event_accumulator.EventAccumulator(str(path), size_guidance={"scalars": 0, "tensors": 0})
    ea.Reload()
    cols = {}
    if reader == "EventAccumulator":
        for tag in ea.Tags()["scalars"]:
            events = ea.Scalars(tag)
            cols[tag] = pd.Series([e.value for e in events], index=[e.step for e in events])
    else:
        from tensorboard.util import tensor_util

        for tag in ea.Tags()["tensors"]:
            events = ea.Tensors(tag)
            cols[tag] = pd.Series([float(tensor_util.make_ndarray(e.tensor_proto))
                                   for e in events], index=[e.step for e in events])
    return pd.DataFrame(cols)


def _long(reader: str, out: Any) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(tag per point, step, value) of a reader's result."""
    if reader.startswith("tbparse"):
        if not len(out):
            return [], np.zeros(0, np.int64), np.zeros(0)
        if "value" not in out.columns:
            raise SystemExit(f"tbparse returned columns {list(out.columns)}")
        values = np.array([float(np.asarray(v).reshape(-1)[0]) for v in out["value"]]) \
            if out["value"].dtype == object else out["value"].to_numpy(np.float64)
        return out["tag"].tolist(), out["step"].to_numpy(np.int64), values
    if reader == "grpo-doctor":  # canonical names (reward_mean, ...) back to the tags logged
        out = out.frame.rename(columns={c: out.mapping.get(c, c) for c in out.frame.columns})
    stacked = out.stack()  # wide frame: (step, tag) -> value, gaps dropped
    return (stacked.index.get_level_values(1).astype(str).tolist(),
            stacked.index.get_level_values(0).to_numpy(np.int64),
            stacked.to_numpy(np.float64))


def worker(reader: str, path: Path, layout: str, n_tags: int, n_steps: int, repeat: int,
           traced: bool) -> None:
    _prepare(reader)
    if traced:  # allocations seen by tracemalloc (numpy's included), in a run of their own
        tracemalloc.start()
        out = _read(reader, path)
        print(json.dumps({"traced_bytes": tracemalloc.get_traced_memory()[1]}))
        return
    out, res = measure(lambda: _read(reader, path), repeat)
    tags, steps, values = _long(reader, out)
    steps = steps - first_step(layout)
    want = expected_values(n_tags, n_steps)
    names = {t: i for i, t in enumerate(tag_names(layout, n_tags))}
    col = np.array([names.get(t, -1) for t in tags], dtype=np.int64)
    inside = (col >= 0) & (steps >= 0) & (steps < n_steps)
    ok = np.zeros(len(values), dtype=bool)
    ok[inside] = values[inside].astype(np.float32) == want[steps[inside], col[inside]]
    # A point counts once: duplicates of a (tag, step) are not extra points.
    res["points_ok"] = len(np.unique(steps[ok] * n_tags + col[ok]))
    res["points"] = len(values)
    print(json.dumps(res))


# --- driver -----------------------------------------------------------------------------------


def _median(xs: list[float]) -> float:
    return float(np.median(xs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tags", type=int, default=50)
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--layouts", nargs="+", default=list(LAYOUTS), choices=list(LAYOUTS))
    ap.add_argument("--readers", nargs="+", default=[*READERS, *TENSOR_READERS],
                    choices=[*READERS, *TENSOR_READERS])
    ap.add_argument("--repeat", type=int, default=3,
                    help="grpo-doctor runs per file and round (best time kept); the others "
                    "run once per round")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run every comparison this many times; medians are reported")
    ap.add_argument("--cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "grpo-doctor-bench")
    ap.add_argument("--rewrite", action="store_true", help="write the event files again")
    ap.add_argument("--traced-all", action="store_true",
                    help="tracemalloc peaks for every reader (slow: tbparse and "
                    "EventAccumulator take 2-3x longer traced); default grpo-doctor only")
    ap.add_argument("--worker", nargs=3, metavar=("READER", "PATH", "LAYOUT"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], Path(args.worker[1]), args.worker[2], args.tags, args.steps,
               args.repeat, args.traced)
        return

    n_points = args.tags * args.steps
    frame_bytes = n_points * 8 + args.steps * 8  # float64 cells + the int64 step index
    print(f"TensorBoard: {args.tags} tags x {args.steps:,d} steps = {n_points:,d} points per "
          f"layout; float64 frame {frame_bytes / 2**20:.1f} MiB; {machine()}")
    folders = {layout: event_folder(args.cache, layout, args.tags, args.steps, args.rewrite)
               for layout in args.layouts}
    # results[(layout, reader)] = one dict per round; ratios are taken within a round.
    results: dict[tuple[str, str], list[dict]] = {}
    for _round in range(args.rounds):
        for layout in args.layouts:
            folder = folders[layout]
            for reader in args.readers:
                if reader in TENSOR_READERS and layout not in TENSOR_LAYOUTS:
                    continue
                wargs = [reader, str(folder), layout, "--tags", str(args.tags),
                         "--steps", str(args.steps)]
                res = run_worker(__file__, [*wargs, "--repeat",
                                            str(args.repeat if reader == "grpo-doctor" else 1)])
                if "error" not in res and (reader == "grpo-doctor" or args.traced_all) \
                        and _round == 0:
                    res.update(run_worker(__file__, [*wargs, "--traced"]))
                results.setdefault((layout, reader), []).append(res)

    head = (f"{'layout':<15s} {'MB':>4s} {'reader':<25s} {'pts ok':>10s} {'wall s':>7s} "
            f"{'cpu s':>6s} {'k pts/s':>7s} {'x wall':>6s} {'x cpu':>6s} {'RSS MiB':>8s} "
            f"{'x frm':>5s} {'traced':>7s} {'x frm':>5s}")
    print(f"medians of {args.rounds} round(s)" if args.rounds > 1 else "one round")
    print(head)
    print("-" * len(head))
    per_point: dict[str, float] = {}
    for (layout, reader), runs in results.items():
        size = sum(p.stat().st_size for p in folders[layout].glob("*tfevents*"))
        errors = [r["error"] for r in runs if "error" in r]
        if errors:
            print(f"{layout:<15s} {size / 1e6:>4.0f} {reader:<25s} error: {errors[0]}")
            continue
        base = results.get((layout, "grpo-doctor"))
        sec = _median([r["seconds"] for r in runs])
        cpu = _median([r["cpu"] for r in runs])
        ok = min(r["points_ok"] for r in runs)
        if reader == "grpo-doctor":
            per_point[layout] = sec / max(ok, 1)
        rate = ok / sec / 1e3
        if base and not any("error" in r for r in base):
            xw = f"{_median([r['seconds'] / b['seconds'] for r, b in zip(runs, base)]):>6.1f}"
            xc = f"{_median([r['cpu'] / b['cpu'] for r, b in zip(runs, base)]):>6.1f}"
        else:
            xw = xc = f"{'-':>6s}"
        rss = max(r["peak_bytes"] for r in runs)
        traced = next((r["traced_bytes"] for r in runs if "traced_bytes" in r), None)
        traced_s = (f"{traced / 2**20:>7.1f} {traced / frame_bytes:>5.1f}" if traced is not None
                    else f"{'-':>7s} {'-':>5s}")
        print(f"{layout:<15s} {size / 1e6:>4.0f} {reader:<25s} {ok:>10,d} "
              f"{sec:>7.2f} {cpu:>6.2f} {rate:>7.0f} {xw} {xc} {rss / 2**20:>8.1f} "
              f"{rss / frame_bytes:>5.1f} {traced_s}")
    print(f"pts ok: points returned with the value written, of {n_points:,d} per layout. "
          "x wall / x cpu: seconds / grpo-doctor's on the same file(s) in the same round "
          "(median over rounds). RSS: resident-set high-water above the level before the "
          "read (max over rounds); traced: tracemalloc peak (Python and numpy allocations, "
          "in a separate run); x frm: / the float64 frame; both include the frame returned.")
    if "multi" in per_point and "hf" in per_point:
        print(f"grpo-doctor seconds per point, multi-value / one-value (hf) events: "
              f"{per_point['multi'] / per_point['hf']:.2f}")
    print("layouts: " + "; ".join(f"{k}: {LAYOUTS[k][1]}" for k in args.layouts))
    print("targets: grpo-doctor >= 30x faster than tbparse on the hf layout; multi-value "
          "events no slower per point than one-value ones; peak <= 3x the frame")


if __name__ == "__main__":
    main()
