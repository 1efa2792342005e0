"""``audit --executor ray`` on a local Ray instance (``num_cpus=2``): the same report, byte for
byte, and the same exit code as the local audit; a task that fails is an error row; Ctrl-C
cancels and exits 130. Skipped where Ray is not installed (the ``ray`` extra)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliRunner

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def ray() -> Iterator[Any]:
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs of several formats, a failing one, and an unreadable log (an error row)."""
    root = tmp_path_factory.mktemp("ray") / "runs"
    for name in ("01_healthy_s1", "03_healthy_s3", "04_healthy_s4", "08_lr_too_high"):
        shutil.copytree(FIXTURES / "corpus" / name, root / name)
    shutil.copy(FIXTURES / "jsonl" / "run.jsonl", root / "verl.jsonl")
    (root / "broken.csv").write_bytes(b"\x00\x01garbage")
    return root


@pytest.mark.slow  # a Ray cluster
@pytest.mark.parametrize("fmt", ["json", "terminal"])
def test_same_report_and_exit_code_as_the_local_audit(ray: Any, runs: Path, cli: CliRunner,
                                                      fmt: str) -> None:
    on_ray = cli("audit", "-f", fmt, "--executor", "ray", str(runs))
    local = cli("audit", "-f", fmt, "-j", "2", str(runs))
    assert on_ray == local
    assert on_ray[0] == 1 and "broken.csv" in on_ray[1]


@pytest.mark.slow  # a Ray cluster
@pytest.mark.parametrize("batch", [1, 3])
def test_a_failed_task_is_an_error_row(ray: Any, runs: Path, batch: int,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the source whose task died is an error row (a batch that fails is run again one
    source per task)."""
    from grpo_doctor import ray_executor
    from grpo_doctor.audit import diagnose_one
    from grpo_doctor.discovery import expand
    from grpo_doctor.ray_executor import run_tasks

    sources, _ = expand([str(runs)])

    def crashing(src: Any, column_map: Any, cfg: Any) -> dict[str, Any]:
        if src.key.startswith("04_"):
            os._exit(1)  # the worker dies: the task is lost (retried once, lost again)
        return diagnose_one(src, column_map, cfg)

    from grpo_doctor.config import Settings

    monkeypatch.setattr(ray_executor, "batch_size", lambda total, cpus: batch)
    results = run_tasks(sources, {}, Settings().doctor_config(), crashing)
    rows = {src.key: r for src, r in zip(sources, results)}
    lost = [k for k, r in rows.items() if "error" in r and "Ray task failed" in r["error"]]
    assert lost == [k for k in rows if k.startswith("04_")]
    assert sum("runs" in r for r in rows.values()) == len(rows) - 2  # and broken.csv


@pytest.mark.slow  # a Ray cluster
def test_ctrl_c_cancels_and_exits_130(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the ray extra is not installed")
    many = tmp_path / "many"
    for i in range(400):
        (many / f"run{i:03d}").mkdir(parents=True)
        shutil.copy(FIXTURES / "corpus" / "04_healthy_s4" / "metrics.csv",
                    many / f"run{i:03d}" / "metrics.csv")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.Popen([sys.executable, "-m", "grpo_doctor", "audit", "--executor", "ray",
                             "-j", "2", str(many)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _has_ray_workers(proc.pid):
            time.sleep(0.2)
        time.sleep(0.3)  # the tasks are running
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, (proc.returncode, err)
    assert err.decode().endswith("grpo-doctor: interrupted\n")
    assert out == b""
    deadline = time.monotonic() + 15  # the local Ray instance it started is stopped too
    while time.monotonic() < deadline and _session(proc.pid):
        time.sleep(0.5)
    assert not _session(proc.pid)


def _session(sid: int) -> list[str]:
    """The processes left in session ``sid``."""
    found = subprocess.run(["ps", "-o", "args=", "-s", str(sid)], capture_output=True,
                           text=True).stdout
    return found.splitlines()


def _has_ray_workers(pid: int) -> bool:
    """Whether a descendant of ``pid`` is a Ray worker running a diagnosis."""
    try:
        out = subprocess.run(["ps", "-o", "pid=,ppid=,args=", "-e"], capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return False
    kids: dict[int, list[tuple[int, str]]] = {}
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3:
            kids.setdefault(int(parts[1]), []).append((int(parts[0]), parts[2]))
    stack = [pid]
    while stack:
        for child, args in kids.get(stack.pop(), []):
            if args.startswith("ray::diagnose_batch"):
                return True
            stack.append(child)
    return False


def test_without_ray_one_line_says_what_to_install(runs: Path, cli: CliRunner,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails
    code, out, err = cli("audit", "--executor", "ray", str(runs))
    assert (code, out) == (2, "")
    assert err == ("grpo-doctor: error: audit --executor ray needs Ray: pip install ray "
                   "(or the ray extra, from a clone: pip install '.[ray]')\n")


def test_an_unreachable_cluster_address_is_refused_at_once():
    """helper-73: Ray retried --ray-address 127.0.0.1:9 for over a minute, printing; a port
    that accepts no connection is an error before Ray is asked."""
    from grpo_doctor.errors import InputError
    from grpo_doctor.ray_executor import _reachable

    with pytest.raises(InputError, match=r"cannot reach the Ray cluster at 127\.0\.0\.1:9 "):
        _reachable("127.0.0.1:9")
    with pytest.raises(InputError):
        _reachable("ray://127.0.0.1:9")
    _reachable("auto")  # left to Ray
