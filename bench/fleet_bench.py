"""Benchmark auditing a fleet's runs (issue 26): from an S3 bucket, and on Ray.

    python bench/fleet_bench.py                 # 2,000 runs (about 15 minutes on 2 cores)
    python bench/fleet_bench.py --runs 200      # a quicker check

The runs are copies of the real writers' files in tests/fixtures (TensorBoard, wandb
offline, trainer_state.json, CSV, verl-style JSONL), one format after another. Side by side,
in one run of this script:

1. ``audit -j 2 s3://...`` against moto's S3 server on loopback (started here): runs/s, and
   the bytes read per run against the files' sizes (counted by grpo-doctor's filesystem
   layer in one process, over the first ``--bytes-runs`` runs).
2. ``audit -j 2 FOLDER`` (the process pool) and ``audit --executor ray -j 2 FOLDER`` (a local
   Ray instance with 2 CPUs) on the same local runs: wall seconds, and Ray's overhead as a
   share of its wall time; Ray's fixed cost (starting the instance) is measured apart, on
   an audit of one run.

Every audit's JSON report is checked to be the same (the run's source and modified time
aside for the bucket).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SOURCES = [FIXTURES / "corpus" / "01_healthy_s1", FIXTURES / "corpus" / "02_healthy_s2",
           FIXTURES / "corpus" / "03_healthy_s3", FIXTURES / "corpus" / "04_healthy_s4",
           FIXTURES / "jsonl"]
BUCKET = "fleet-bench"


def make_runs(root: Path, n: int) -> int:
    """``n`` run folders under ``root``; their total size in bytes."""
    total = 0
    for i in range(n):
        src = SOURCES[i % len(SOURCES)]
        dst = root / f"run{i:05d}"
        shutil.copytree(src, dst)
        total += sum(f.stat().st_size for f in dst.rglob("*") if f.is_file())
    return total


def timed(args: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    start = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "grpo_doctor", *args], capture_output=True,
                       text=True, env=env)
    seconds = time.perf_counter() - start
    if p.returncode not in (0, 1):
        raise SystemExit(f"audit failed ({p.returncode}): {p.stderr.strip()}")
    return seconds, p.returncode, p.stdout


def same(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: same(v) for k, v in doc.items() if k not in ("source", "modified")}
    if isinstance(doc, list):
        return [same(v) for v in doc]
    return doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--bytes-runs", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--repeat", type=int, default=1,
                        help="Alternate the process pool and Ray this many times; best of each "
                        "(a shared machine's load varies from minute to minute).")
    opts = parser.parse_args()

    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
                      AWS_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true",
                      RAY_USAGE_STATS_ENABLED="0")
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    os.environ["AWS_ENDPOINT_URL"] = f"http://{host}:{port}"
    env = dict(os.environ)
    jobs = str(opts.jobs)
    out: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        size = make_runs(runs, opts.runs)
        files = [f for f in runs.rglob("*") if f.is_file()]
        s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
        s3.create_bucket(Bucket=BUCKET)
        start = time.perf_counter()
        for f in files:
            s3.upload_file(str(f), BUCKET, f"runs/{f.relative_to(runs).as_posix()}")
        upload = time.perf_counter() - start
        out.append(f"{opts.runs:,} runs, {len(files):,} objects, {size / 2**20:,.1f} MiB "
                   f"({size / opts.runs / 1024:,.0f} KiB per run); uploaded in {upload:.0f} s")

        local_s, local_code, local_out = timed(["audit", "-f", "json", "-j", jobs, str(runs)],
                                               env)
        s3_s, s3_code, s3_out = timed(["audit", "-f", "json", "-j", jobs,
                                       f"s3://{BUCKET}/runs"], env)
        assert s3_code == local_code
        assert same(json.loads(s3_out)) == same(json.loads(local_out)), "S3 != local"
        out.append(f"| audit -j {jobs}, local folder | {local_s:.1f} s | "
                   f"{opts.runs / local_s:.1f} runs/s |")
        out.append(f"| audit -j {jobs}, s3:// on loopback | {s3_s:.1f} s | "
                   f"{opts.runs / s3_s:.1f} runs/s |")

        # Bytes read: the library's own count, in this process (jobs=1), over the first runs.
        from grpo_doctor import objstore
        from grpo_doctor.audit import audit

        sub = min(opts.bytes_runs, opts.runs)
        sub_size = sum(f.stat().st_size for i in range(sub)
                       for f in (runs / f"run{i:05d}").rglob("*") if f.is_file())
        objstore.forget_filesystems()
        before = objstore.BYTES_READ[0]
        uris = [f"s3://{BUCKET}/runs/run{i:05d}" for i in range(sub)]
        audit(uris, jobs=1)
        read = objstore.BYTES_READ[0] - before
        out.append(f"bytes read over {sub} runs: {read / sub / 1024:,.1f} KiB per run against "
                   f"{sub_size / sub / 1024:,.1f} KiB of files ({read / sub_size:.3f}x)")

        if not opts.no_ray:
            one = Path(tmp) / "one"
            shutil.copytree(SOURCES[3], one / "run")
            fixed, _, _ = timed(["audit", "-f", "json", "--executor", "ray", "-j", jobs,
                                 str(one)], env)
            ray_s, ray_code, ray_out = timed(["audit", "-f", "json", "--executor", "ray",
                                              "-j", jobs, str(runs)], env)
            assert ray_code == local_code and ray_out == local_out, "Ray != local"
            for _ in range(opts.repeat - 1):
                local_s = min(local_s, timed(["audit", "-f", "json", "-j", jobs, str(runs)],
                                             env)[0])
                ray_s = min(ray_s, timed(["audit", "-f", "json", "--executor", "ray", "-j",
                                          jobs, str(runs)], env)[0])
            out.append(f"| audit -j {jobs}, local folder, best of {opts.repeat} | "
                       f"{local_s:.1f} s | {opts.runs / local_s:.1f} runs/s |")
            out.append(f"| audit --executor ray -j {jobs}, local folder | {ray_s:.1f} s | "
                       f"{opts.runs / ray_s:.1f} runs/s |")
            over = ray_s - local_s
            out.append(f"Ray over the process pool: {over:+.1f} s = {100 * over / ray_s:.1f}% of "
                       f"Ray's wall time ({1000 * over / opts.runs:+.1f} ms per run); Ray's "
                       f"fixed cost (an audit of one run): {fixed:.1f} s; the rest: "
                       f"{100 * (over - fixed) / ray_s:+.1f}%")
    server.stop()
    print("\n".join(out))


if __name__ == "__main__":
    main()
