"""Shared by the importer benches: time and peak memory of one call, in a worker process.

Peak memory is the resident-set high-water mark above the resident set just before the call
(Linux: ``/proc/self/clear_refs`` resets ``VmHWM``; elsewhere ``ru_maxrss`` above its level
before the call, which undercounts when the call reuses memory freed earlier). Unlike
tracemalloc it sees C allocations (protobuf, pyarrow, numpy's too) and costs no time; the
result the call returns is included. CPU seconds are this process's plus its waited-for
children's: other jobs on a shared machine inflate them less than wall seconds.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def measure(call: Callable[[], Any], repeat: int = 1) -> tuple[Any, dict[str, float]]:
    """``call()`` ``repeat`` times: its last result and the best wall / CPU seconds, the
    highest peak (bytes above the level before the call) and the largest child's max RSS."""
    best = best_cpu = float("inf")
    peak_kb = 0
    out = None
    for _ in range(max(repeat, 1)):
        out = None
        gc.collect()
        reset = _reset_peak()
        base = (_status_kb("VmRSS") if reset
                else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) or 0
        c0 = _cpu()
        t0 = time.perf_counter()
        out = call()
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, _cpu() - c0)
        high = (_status_kb("VmHWM") if reset
                else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) or 0
        peak_kb = max(peak_kb, high - base)
    child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return out, {"seconds": best, "cpu": best_cpu, "peak_bytes": peak_kb * 1024,
                 "child_bytes": child_kb * 1024}


def run_worker(script: str | Path, args: list[str], env: dict[str, str] | None = None) -> dict:
    """Run ``script --worker ...args`` in a fresh interpreter; its last stdout line as JSON,
    or ``{"error": last stderr line}``."""
    cmd = [sys.executable, str(script), "--worker", *args]
    full_env = {**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})}
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, cwd=root)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def machine() -> str:
    """One line: cores, memory, CPU model, Python."""
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    load = os.getloadavg()[0]
    return (f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, Python "
            f"{sys.version.split()[0]}, load average {load:.1f} at start")
