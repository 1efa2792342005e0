"""Fuzz the parsers of untrusted bytes: TensorBoard event files, W&B ``.wandb`` records and
console logs. A finding is any exception other than GrpoDoctorError, a GrpoDoctorError whose
message is not one line, or an input that takes longer than ``--timeout`` seconds.

    python bench/fuzz.py --target tensorboard --seconds 120
    python bench/fuzz.py --target all --seconds 300      # each target in turn, 300 s each
    python bench/fuzz.py --target console --engine hypothesis --seconds 60
    python bench/fuzz.py --target environment            # the hostile-environment cases
    python bench/fuzz.py --target environment --package-root ../main   # ... of another checkout

``--target environment`` is not random: it runs the table of hostile-environment cases in
``bench/fuzz_environment.py`` (devices, FIFOs and sockets as inputs and outputs, file names that
forge workflow commands, Ctrl-C during a parallel audit, steps beyond int64, configuration that
ignores everything, unencodable stdout, a full disk, trees 1,000 deep, files named alike
against a baseline, YAML alias bombs, SQLite cells of other types, bad shard records, hostile
trainer-callback hooks, no stdout ...) through the CLI in
subprocesses, and prints one line per case: ok, or what went wrong (hang, traceback, exit code,
a device replaced, a raw control character, a wrong answer). Run as root to include the cases
that need ``mknod``.

Engines: atheris (``pip install atheris``; coverage-guided libFuzzer over the grpo_doctor
bytecode) when it is installed, else hypothesis run for the time budget (random bytes and
mutations of the seeds). Either way the seeds are the fixtures of the target
(tests/fixtures/{tensorboard,wandb,console,bad}), and each input goes through the importer's
``load`` exactly as a file on disk would (written to a RAM-backed temp folder when there is one).

Findings are written to ``--artifacts`` (default ``$TMPDIR/grpo-doctor-fuzz/<target>/``, outside
the repository) and the script exits 1; atheris also keeps the inputs that reached new code in
``<artifacts>/corpus`` so a later run starts from there. Reproduce a finding with
``--replay FILE``, which also prints the memory the input took: under atheris the process
itself grows with large inputs (the TensorBoard target reached ~3 GB in 300 s, while replaying
its whole corpus in plain Python peaks at ~140 MB), so an ``oom-*`` input is a finding only if
its replay says so.

Budget and findings so far (300 s per target, atheris, full importer load): tensorboard 4.5k
inputs, wandb 20.6k, console 27k, no finding after the fixes of the commit that added this
script; with --parse-only 6.5k / 58k / 52k, no finding.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT / "tests" / "fixtures"

#: target -> (file name the input is written as, importer module, seed files)
TARGETS = {
    "tensorboard": ("events.out.tfevents.1700000000.fuzz", "tensorboard",
                    ["tensorboard/**/*tfevents*", "bad/**/*tfevents*",
                     "bad/tensorboard-named.csv"]),
    "wandb": ("run-fuzz.wandb", "wandb_offline", ["wandb/**/*.wandb", "bad/**/*.wandb"]),
    "console": ("train.log", "console", ["console/*.log", "csv/*.csv", "jsonl/*.jsonl"]),
}
MAX_SEED = 256 * 1024  # seeds are cut to this many bytes (libFuzzer's -max_len as well)


def seeds(target: str) -> list[Path]:
    out: list[Path] = []
    for pattern in TARGETS[target][2]:
        out += sorted(p for p in FIXTURES.glob(pattern) if p.is_file())
    return out


def scratch_dir() -> Path:
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix="grpo-doctor-fuzz-", dir=base))


def _parser(target: str):  # -> Callable[[Path], object]
    """The parse step alone (no run built): more inputs per second for ``--parse-only``."""
    if target == "tensorboard":
        from grpo_doctor.importers.tensorboard import read_event_file

        return read_event_file
    if target == "wandb":
        from grpo_doctor.importers.wandb_offline import _build_frame, read_wandb_log

        return lambda path: _build_frame(read_wandb_log(path))
    from grpo_doctor.importers._common import read_text
    from grpo_doctor.importers.console import parse_console

    return lambda path: parse_console(read_text(path))


class Harness:
    """Loads one input through the target's importer; raises on a finding."""

    def __init__(self, target: str, timeout: float, parse_only: bool = False) -> None:
        import importlib

        from grpo_doctor.errors import GrpoDoctorError
        from grpo_doctor.importers import LoadOptions

        name, module, _ = TARGETS[target]
        importer = importlib.import_module(f"grpo_doctor.importers.{module}").IMPORTER
        self.load = _parser(target) if parse_only else (
            lambda path: importer.load(path, LoadOptions()))
        self.error = GrpoDoctorError
        self.folder = scratch_dir()
        self.path = self.folder / name
        self.timeout = timeout

    def __call__(self, data: bytes) -> None:
        self.path.write_bytes(data)
        start = time.perf_counter()
        try:
            runs = self.load(self.path)
        except self.error as exc:
            if "\n" in str(exc):
                raise AssertionError(f"a multi-line error message: {str(exc)!r}") from exc
        else:
            for run in runs if isinstance(runs, list) else ():
                index = run.frame.index
                if not (index.is_monotonic_increasing and index.is_unique and run.n_steps):
                    raise AssertionError(f"run {run.name!r}: steps not sorted and unique")
        took = time.perf_counter() - start
        if took > self.timeout:
            raise TimeoutError(f"one input took {took:.1f} s (limit {self.timeout:g} s)")

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def save_finding(artifacts: Path, data: bytes, exc: BaseException) -> Path:
    import hashlib

    artifacts.mkdir(parents=True, exist_ok=True)
    path = artifacts / f"finding-{hashlib.sha1(data).hexdigest()[:12]}"
    path.write_bytes(data)
    path.with_suffix(".txt").write_text("".join(traceback.format_exception(exc)))
    return path


# --- atheris ---------------------------------------------------------------------------------


def run_atheris(target: str, seconds: int, timeout: float, artifacts: Path,
                parse_only: bool, rss_limit_mb: int) -> int:
    """libFuzzer in a child process (it exits when done), one per target."""
    corpus = artifacts / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    for seed in seeds(target):
        shutil.copy(seed, corpus / f"seed-{seed.parent.name}-{seed.name}")
    cmd = [sys.executable, __file__, "--target", target, "--engine", "atheris-child",
           "--timeout", str(timeout), "--artifacts", str(artifacts),
           *(["--parse-only"] if parse_only else []), "--",
           str(corpus), f"-max_total_time={seconds}", f"-timeout={int(timeout) + 1}",
           f"-max_len={MAX_SEED}", f"-rss_limit_mb={rss_limit_mb}",
           f"-artifact_prefix={artifacts}/", "-print_final_stats=1"]
    return subprocess.call(cmd)


def atheris_child(target: str, timeout: float, artifacts: Path, parse_only: bool,
                  libfuzzer_args: list[str]) -> None:
    import atheris

    with atheris.instrument_imports(include=["grpo_doctor"]):
        harness = Harness(target, timeout, parse_only)

    def one_input(data: bytes) -> None:
        try:
            harness(data)
        except BaseException as exc:
            where = save_finding(artifacts, data, exc)
            print(f"\nfinding: {type(exc).__name__}: {exc} (input saved to {where})",
                  file=sys.stderr)
            raise

    atheris.Setup([sys.argv[0], *libfuzzer_args], one_input)
    atheris.Fuzz()


# --- hypothesis ------------------------------------------------------------------------------


def run_hypothesis(target: str, seconds: int, timeout: float, artifacts: Path,
                   parse_only: bool, rss_limit_mb: int) -> int:
    import warnings

    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st
    from hypothesis.errors import HypothesisWarning

    warnings.simplefilter("ignore", HypothesisWarning)  # reprs of large inputs
    harness = Harness(target, timeout, parse_only)
    pool = [p.read_bytes()[:MAX_SEED] for p in seeds(target)]
    deadline = time.monotonic() + seconds
    stats = {"inputs": 0, "findings": 0}
    findings: dict[str, Path] = {}

    @st.composite
    def inputs(draw) -> bytes:
        if not pool or draw(st.integers(0, 9)) == 0:
            return draw(st.binary(max_size=4096))
        data = bytearray(draw(st.sampled_from(pool)))
        for _ in range(draw(st.integers(1, 16))):
            pos = draw(st.integers(0, max(len(data) - 1, 0)))
            op = draw(st.integers(0, 3))
            if op == 0 and data:
                data[pos] = draw(st.integers(0, 255))
            elif op == 1:
                data[pos:pos] = draw(st.binary(min_size=1, max_size=32))
            elif op == 2 and data:
                del data[pos : pos + draw(st.integers(1, 512))]
            else:  # splice in a piece of another seed
                other = draw(st.sampled_from(pool))
                start = draw(st.integers(0, max(len(other) - 1, 0)))
                data[pos:pos] = other[start : start + draw(st.integers(1, 4096))]
        return bytes(data[: draw(st.integers(0, len(data)))] if draw(st.booleans()) else data)

    @settings(max_examples=10**9, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(inputs())
    def fuzz(data: bytes) -> None:
        if time.monotonic() > deadline:
            raise _Done
        stats["inputs"] += 1
        try:
            harness(data)
        except BaseException as exc:
            key = f"{type(exc).__name__}:{traceback.extract_tb(exc.__traceback__)[-1][:2]}"
            if key not in findings:
                findings[key] = save_finding(artifacts, data, exc)
                print(f"finding: {type(exc).__name__}: {str(exc)[:200]} "
                      f"(input saved to {findings[key]})", file=sys.stderr)
            stats["findings"] += 1

    try:
        fuzz()
    except _Done:
        pass
    finally:
        harness.close()
    print(f"{target}: {stats['inputs']:,} inputs in {seconds} s, "
          f"{len(findings)} distinct finding(s)")
    return 1 if findings else 0


class _Done(Exception):
    """The time budget is spent."""


# --- command line ----------------------------------------------------------------------------


def replay(target: str, path: Path, timeout: float, parse_only: bool) -> int:
    """One saved input through the harness, with the peak memory it took (to tell a real
    out-of-memory input from the fuzzing process's own growth)."""
    import resource

    harness = Harness(target, timeout, parse_only)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        harness(path.read_bytes())
    finally:
        harness.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"{path}: no finding ({target}; peak memory {peak // 1024} MB, "
          f"+{(peak - before) // 1024} MB for this input)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=[*TARGETS, "all", "environment"], default="all")
    parser.add_argument("--package-root", type=Path, default=None,
                        help="environment: run the cases against this checkout of grpo-doctor")
    parser.add_argument("--case", default=None, help="environment: only cases whose name "
                        "holds this")
    parser.add_argument("--seconds", type=int, default=120, help="budget per target")
    parser.add_argument("--timeout", type=float, default=10.0,
                        help="seconds one input may take before it is a finding")
    parser.add_argument("--engine", choices=["auto", "atheris", "hypothesis", "atheris-child"],
                        default="auto")
    parser.add_argument("--artifacts", type=Path, default=None,
                        help="where findings go (default $TMPDIR/grpo-doctor-fuzz/<target>/)")
    parser.add_argument("--replay", type=Path, default=None, help="run one saved input")
    parser.add_argument("--rss-limit-mb", type=int, default=4096,
                        help="atheris: a process growing past this is a finding; check an "
                        "oom-* input with --replay (atheris itself grows on large inputs)")
    parser.add_argument("--parse-only", action="store_true",
                        help="fuzz the parse step alone (no run built): more inputs per second")
    parser.add_argument("libfuzzer", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.target == "environment":
        from bench.fuzz_environment import run_cases

        return run_cases(args.package_root, only=args.case)
    if args.engine == "atheris-child":
        atheris_child(args.target, args.timeout, args.artifacts, args.parse_only,
                      args.libfuzzer)
        return 0
    targets = list(TARGETS) if args.target == "all" else [args.target]
    if args.replay is not None:
        return max(replay(t, args.replay, args.timeout, args.parse_only) for t in targets)
    engine = args.engine
    if engine == "auto":
        try:
            import atheris  # noqa: F401

            engine = "atheris"
        except ImportError:
            engine = "hypothesis"
    status = 0
    for target in targets:
        artifacts = args.artifacts or Path(tempfile.gettempdir()) / "grpo-doctor-fuzz" / target
        print(f"== {target}: {engine}, {args.seconds} s, findings to {artifacts}", flush=True)
        run = run_atheris if engine == "atheris" else run_hypothesis
        status |= run(target, args.seconds, args.timeout, artifacts, args.parse_only,
                      args.rss_limit_mb) != 0
    return status


if __name__ == "__main__":
    sys.exit(main())
