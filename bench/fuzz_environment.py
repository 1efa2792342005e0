"""The hostile-environment cases of ``bench/fuzz.py --target environment``: what an attacker or
an unlucky CI machine does around grpo-doctor rather than inside one file's bytes.

Each case builds what it needs in a temp folder (devices with ``mknod`` when running as root,
FIFOs, sockets, file names holding control characters, a 100M-row parquet file, a tree 1,000
folders deep ...), runs the real CLI in a subprocess with a time limit, and judges the outcome:

* **hang** - the command did not end within the limit;
* **traceback** - a Python traceback on stderr;
* **exit** - an exit code outside the case's expected set (0/1 diagnosis, 2 input error, 130
  Ctrl-C; 3 is an internal error and never expected);
* **stderr** - more than one line on stderr for an error;
* **replaced** - a device, FIFO or socket given as a target is no longer one;
* **raw** - a control character, ESC or bidi override in the output, or a line a GitHub
  Actions runner would read as a workflow command outside a ``::stop-commands::`` stretch;
* **wrong** - the case's own check (a healthy verdict for a run nothing could check, a file
  written where nothing may be, rows lost ...).

``--package-root DIR`` runs the cases against another checkout (``PYTHONPATH=DIR``), to compare
before and after a change. The real ``/dev`` is never a target.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.helpers import remove_tree, workflow_commands

BAD = ROOT / "tests" / "fixtures" / "bad"
EXAMPLES = ROOT / "grpo_doctor" / "examples"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
#: Control characters, ESC, C1 and bidi controls: never raw in an output.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@dataclass
class Outcome:
    code: int | None  # None: killed after the time limit
    out: str
    err: str
    seconds: float


@dataclass
class Verdict:
    case: str
    summary: str  # what happened, in a few words
    problems: list[str]


class Env:
    """One case's temp folder and the way it runs the CLI."""

    def __init__(self, folder: Path, package_root: Path | None, timeout: float) -> None:
        self.dir = folder
        self.timeout = timeout
        self.env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        self.env.pop("GITHUB_ACTIONS", None)
        if package_root is not None:
            self.env["PYTHONPATH"] = str(package_root)

    def run(self, *args: str, env: dict[str, str] | None = None, stdout: object = None,
            timeout: float | None = None, sigint_after: float | None = None) -> Outcome:
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "grpo_doctor", *args], cwd=self.dir,
                                env={**self.env, **(env or {})},
                                stdout=stdout if stdout is not None else subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        if sigint_after is not None:
            time.sleep(sigint_after)
            os.killpg(proc.pid, signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=timeout or self.timeout)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            code = None
        finally:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)  # a worker left behind
        text = (out or b"").decode("utf-8", "replace"), (err or b"").decode("utf-8", "replace")
        return Outcome(code, *text, time.monotonic() - start)

    def copy(self, source: Path, name: str) -> Path:
        target = self.dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
        return target

    def device(self, name: str, major: int, minor: int) -> Path:
        path = self.dir / name
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(major, minor))
        return path


#: grpo-doctor's own annotations: the workflow commands it is meant to print.
_OURS = re.compile(r"\s*::(error|warning|notice) title=grpo-doctor [a-z_ ]+::")


def _commands(text: str) -> list[str]:
    """Workflow commands in ``text`` that are not grpo-doctor's own annotations."""
    return [line for line in workflow_commands(text) if not _OURS.match(line)]


def judge(case: str, o: Outcome, expect: set[int], *, extra: list[str] | None = None,
          what: str = "") -> Verdict:
    problems = list(extra or [])
    if o.code is None:
        problems.append(f"hang (> {o.seconds:.0f} s)")
    if "Traceback" in o.err:
        problems.append("traceback")
    if o.code is not None and o.code not in expect:
        problems.append(f"exit {o.code}")
    if o.code == 2 and o.err.count("\n") != 1:
        problems.append("stderr not one line")
    if RAW.search(o.out) or RAW.search(o.err):
        problems.append("raw control character")
    if _commands(o.out) or _commands(o.err):
        problems.append("workflow command")
    line = (o.err.strip().splitlines() or [""])[-1]
    summary = what or (f"exit {o.code}" + (f": {line[:90]}" if line else ""))
    return Verdict(case, summary, problems)


# --- the cases ---------------------------------------------------------------------------------
# Each takes an Env and returns a Verdict.

HEALTHY = ["diagnose", "--example", "healthy", "-f", "json"]


def needs_root(fn: Callable[[Env], Verdict]) -> Callable[[Env], Verdict]:
    fn.needs_root = True  # type: ignore[attr-defined]
    return fn


@needs_root
def output_null_device(e: Env) -> Verdict:
    null = e.device("null", 1, 3)
    o = e.run(*HEALTHY, "-o", "null", "--force")
    kept = stat.S_ISCHR(os.lstat(null).st_mode)
    return judge("-o <null device> --force", o, {0}, extra=[] if kept else ["replaced"],
                 what=f"exit {o.code}; {'still a device' if kept else 'became a regular file'}")


@needs_root
def output_full_device(e: Env) -> Verdict:
    e.device("full", 1, 7)
    return judge("-o <full device>", e.run(*HEALTHY, "-o", "full", "--force"), {2})


@needs_root
def output_mem_device(e: Env) -> Verdict:
    mem = e.device("mem", 1, 1)
    o = e.run(*HEALTHY, "-o", "mem", "--force")
    kept = stat.S_ISCHR(os.lstat(mem).st_mode)
    return judge("-o <other device> --force", o, {2}, extra=[] if kept else ["replaced"])


def output_fifo_no_reader(e: Env) -> Verdict:
    os.mkfifo(e.dir / "fifo")
    o = e.run(*HEALTHY, "-o", "fifo", "--force", timeout=30)
    kept = stat.S_ISFIFO(os.lstat(e.dir / "fifo").st_mode)
    return judge("-o <FIFO nobody reads>", o, {2}, extra=[] if kept else ["replaced"])


def output_fifo_reader(e: Env) -> Verdict:
    fifo = e.dir / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    o = e.run(*HEALTHY, "-o", "fifo", "--force", timeout=30)
    reader.join(5)
    ok = bool(got) and b'"status"' in got[0] and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    return judge("-o <FIFO with a reader>", o, {0}, extra=[] if ok else ["wrong"],
                 what=f"exit {o.code}; reader got {len(got[0]) if got else 0} bytes")


def output_socket(e: Env) -> Verdict:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(e.dir / "sock"))
    try:
        o = e.run(*HEALTHY, "-o", "sock", "--force")
    finally:
        sock.close()
    kept = stat.S_ISSOCK(os.lstat(e.dir / "sock").st_mode)
    return judge("-o <socket> --force", o, {2}, extra=[] if kept else ["replaced"])


def output_dev_stdout(e: Env) -> Verdict:
    with (e.dir / "out.json").open("wb") as fh:
        o = e.run(*HEALTHY, "-o", "/dev/stdout", stdout=fh)
    ok = json.loads((e.dir / "out.json").read_text() or "{}").get("status") == "healthy"
    return judge("-o /dev/stdout > file", o, {0}, extra=[] if ok else ["wrong"],
                 what=f"exit {o.code}; report {'in' if ok else 'not in'} the file")


def concurrent_baselines(e: Env) -> Verdict:
    e.copy(BAD / "inf.csv", "runs/a.csv")
    procs = [subprocess.Popen([sys.executable, "-m", "grpo_doctor", "audit", "runs", "--jobs",
                               "1", "--write-baseline", "base.json"], cwd=e.dir, env=e.env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for _ in range(3)]
    codes = [p.wait(timeout=e.timeout) for p in procs]
    errs = [p.stderr.read().decode() for p in procs if p.stderr]
    won = sum(c == 0 for c in codes)
    return Verdict("3 concurrent --write-baseline", f"{won} of 3 wrote; exits {codes}",
                   [] if won == 1 and all("Traceback" not in x for x in errs) else ["wrong"])


def audit_html_used_folder(e: Env) -> Verdict:
    e.copy(BAD / "inf.csv", "runs/a.csv")
    e.run("audit", "runs", "--jobs", "1", "--html", "report")
    before = sorted(p.name for p in (e.dir / "report").iterdir())
    e.copy(BAD / "bom.csv", "other/z.csv")  # another audit: new page names, the same index
    o = e.run("audit", "other", "--jobs", "1", "--html", "report")
    after = sorted(p.name for p in (e.dir / "report").iterdir())
    return judge("audit --html <used folder>", o, {2},
                 extra=[] if after == before else ["wrote into the used folder"],
                 what=f"exit {o.code}; {len(after) - len(before)} new file(s)")


def workflow_injection(e: Env) -> Verdict:
    e.copy(EXAMPLES / "entropy-collapse.csv", "runs/run\n::error title=PWNED::x\n.csv")
    o = e.run("audit", "runs", "--jobs", "1", env={"GITHUB_ACTIONS": "true"})
    forged = [c for c in o.out.split("\n") if "title=PWNED" in c.split("::", 2)[1:2]
              or c.lstrip().startswith("::error title=PWNED")]
    return judge("file name forging ::error (GITHUB_ACTIONS)", o, {1},
                 extra=["forged command"] if forged else [],
                 what=f"exit {o.code}; {len(forged)} forged command(s)")


def escapes_in_names(e: Env) -> Verdict:
    text = (EXAMPLES / "entropy-collapse.csv").read_text()
    e.dir.joinpath("\x1b]0;TITLE\x07\u202erun.csv").write_text(
        text.replace("train/entropy", "train/ent\x1b[2J\u202eropy"))
    outs = [e.run(cmd, "\x1b]0;TITLE\x07\u202erun.csv") for cmd in ("metrics", "diagnose")]
    worst = max(outs, key=lambda o: bool(RAW.search(o.out + o.err)))
    return judge("ESC/bidi in file and column names", worst, {0, 1})


def fifo_inputs(e: Env) -> Verdict:
    os.mkfifo(e.dir / "run.csv")
    shutil.copy(BAD / "inf.csv", e.dir / "ok.csv")
    runs = [e.run("diagnose", "run.csv", timeout=20),
            e.run("diagnose", "run.csv", "--input-format", "csv", timeout=20),
            e.run("audit", "ok.csv", "--baseline", "run.csv", timeout=20),
            e.run("watch", "run.csv", "--once", timeout=20)]
    hung = sum(o.code is None for o in runs)
    worst = next((o for o in runs if o.code != 2), runs[0])
    return judge("FIFO as input (diagnose, --input-format, --baseline, watch)", worst, {2},
                 what=f"{hung} of {len(runs)} hung; exits {[o.code for o in runs]}")


@needs_root
def endless_device_input(e: Env) -> Verdict:
    e.device("zero", 1, 5)
    return judge("--input-format csv <zero device>",
                 e.run("diagnose", "zero", "--input-format", "csv", timeout=30), {2})


def parquet_100m_rows(e: Env) -> Verdict:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    zeros = pa.table({"reward": pa.array(np.zeros(20_000_000))})
    with pq.ParquetWriter(e.dir / "h.parquet", zeros.schema, compression="zstd") as writer:
        for _ in range(5):
            writer.write_table(zeros, row_group_size=20_000_000)
    o = e.run("diagnose", "h.parquet", timeout=60)
    return judge("0.4 MB parquet of 100M rows", o, {2}, what=f"exit {o.code} in {o.seconds:.1f} s")


def ctrl_c_audit(e: Env) -> Verdict:
    for i in range(24):
        e.copy(EXAMPLES / "entropy-collapse.csv", f"runs/r{i}.csv")
    outcomes = [e.run("audit", "runs", "--jobs", "2", sigint_after=delay, timeout=30)
                for delay in (0.5, 1.2, 2.0)]
    bad = [o for o in outcomes if o.code not in (0, 1, 130) or "Traceback" in o.err]
    return judge("Ctrl-C during audit --jobs 2 (x3)", bad[0] if bad else outcomes[-1],
                 {0, 1, 130}, what=f"exits {[o.code for o in outcomes]}")


def steps_beyond_int64(e: Env) -> Verdict:
    o = e.run("diagnose", str(BAD / "steps-beyond-int64.csv"), "-f", "json")
    healthy = o.code == 0 and '"status": "healthy"' in o.out
    return judge("steps 1e19+i", o, {2}, extra=["healthy"] if healthy else [])


def steps_2p62(e: Env) -> Verdict:
    o = e.run("diagnose", str(BAD / "steps-2p62.csv"), "-f", "json")
    n = json.loads(o.out)["run"]["n_steps"] if o.code in (0, 1) else None
    return judge("steps 2^62+i (an entropy collapse)", o, {1},
                 extra=[] if n == 200 else ["rows lost"], what=f"exit {o.code}; {n} steps")


def steps_half(e: Env) -> Verdict:
    o = e.run("diagnose", str(BAD / "steps-half.csv"), "-f", "markdown")
    lie = "repeat a step" in o.out
    return judge("steps 0, 0.5, 1, ...", o, {1}, extra=["note says repeats"] if lie else [],
                 what=f"exit {o.code}; {'repeats' if lie else 'not whole numbers'} noted")


def duplicate_entropy(e: Env) -> Verdict:
    o = e.run("diagnose", str(BAD / "duplicate-entropy.csv"), "-f", "json")
    found = '"status": "critical"' in o.out
    return judge("two entropy columns, the 2nd constant", o, {1},
                 extra=[] if found else ["collapse missed"],
                 what=f"exit {o.code}; collapse {'found' if found else 'missed'}")


def ignore_everything(e: Env) -> Verdict:
    from grpo_doctor.rules import RULES

    (e.dir / "grpo-doctor.toml").write_text(
        "ignore = [" + ", ".join(f'"{r.id}"' for r in RULES) + "]\n")
    o = e.run("diagnose", "--example", "entropy-collapse")
    healthy = "HEALTHY" in o.out or "No failure mode found" in o.out
    said = "INCONCLUSIVE" in o.out
    return judge("grpo-doctor.toml ignoring every check", o, {0},
                 extra=["healthy"] if healthy else [] if said else ["not inconclusive"],
                 what=f"exit {o.code}; {'healthy' if healthy else 'inconclusive' if said else '?'}")


def invalid_pyproject(e: Env) -> Verdict:
    (e.dir / "pyproject.toml").write_text('[tool.grpo-doctor]\nfail-on = "never"\nx = [\n')
    return judge("pyproject.toml with a TOML error", e.run("diagnose", "--example", "kl-drift"),
                 {2})


def set_nan(e: Env) -> Verdict:
    return judge("--set kl_drift.stop_kl=nan", e.run(*HEALTHY, "--set", "kl_drift.stop_kl=nan"),
                 {2})


def set_unknown_rule(e: Env) -> Verdict:
    return judge("--set kl_drfit.stop_kl=1", e.run(*HEALTHY, "--set", "kl_drfit.stop_kl=1"), {2})


def ascii_stdout(e: Env) -> Verdict:
    return judge("PYTHONIOENCODING=ascii", e.run("diagnose", "--example", "entropy-collapse",
                                                 "-f", "markdown",
                                                 env={"PYTHONIOENCODING": "ascii"}), {1})


@needs_root
def stdout_full(e: Env) -> Verdict:
    full = e.device("full", 1, 7)
    with full.open("wb") as fh:
        o = e.run("diagnose", "--example", "healthy", stdout=fh)
    return judge("stdout on a full disk", o, {2})


def grad_near_max_float(e: Env) -> Verdict:
    lines = ["step,grad_norm,reward,entropy"]
    lines += [f"{i},{1.0 if i < 100 else 1.7e308 * (1 if i % 2 else 0.5)!r},{0.1 + 0.001 * i},"
              f"{1 - 0.001 * i}" for i in range(200)]
    (e.dir / "g.csv").write_text("\n".join(lines) + "\n")
    return judge("grad norm 1.7e308 --html", e.run("diagnose", "g.csv", "-f", "json", "--html",
                                                   "g.html"), {0, 1})


def deep_baseline(e: Env) -> Verdict:
    (e.dir / "b.json").write_text("[" * 100_000 + "]" * 100_000)
    return judge("baseline nested 100,000 deep",
                 e.run("audit", str(BAD / "inf.csv"), "--baseline", "b.json"), {2})


def deep_tree(e: Env) -> Verdict:
    e.copy(BAD / "inf.csv", "runs/a.csv")
    folder = str(e.dir / "runs")
    fd = os.open(folder, os.O_RDONLY)
    for _ in range(1000):  # relative to the last folder: paths never grow past PATH_MAX
        os.mkdir("d", dir_fd=fd)
        nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nxt
    os.close(fd)
    o = e.run("audit", "runs", "--jobs", "1", "-f", "json")
    runs = _runs(o)
    return judge("folder tree 1,000 deep + a run", o, {1},
                 extra=[] if runs == 1 else ["runs lost"], what=f"exit {o.code}; {runs} run(s)")


def _runs(o: Outcome) -> int:
    try:
        return len(json.loads(o.out)["runs"])
    except (ValueError, KeyError, TypeError):
        return 0


def linked_run_folder(e: Env) -> Verdict:
    shutil.copytree(ROOT / "tests" / "fixtures" / "tensorboard" / "simple_value",
                    e.dir / "elsewhere" / "exp1")
    (e.dir / "runs").mkdir()
    (e.dir / "runs" / "exp1").symlink_to(e.dir / "elsewhere" / "exp1")
    (e.dir / "runs" / "loop").symlink_to(e.dir / "runs")
    shutil.copy(BAD / "inf.csv", e.dir / "runs" / "a.csv")
    o = e.run("audit", "runs", "--jobs", "1", "-f", "json")
    runs = _runs(o)
    return judge("symlinked run folder + a link loop", o, {1},
                 extra=[] if runs == 2 else ["a run passed over silently"],
                 what=f"exit {o.code}; {runs} of 2 runs")


def watch_markup_path_on_a_terminal(e: Env) -> Verdict:
    import pty

    folder = e.dir / "runs" / "[/b]"
    folder.mkdir(parents=True)
    shutil.copy(EXAMPLES / "entropy-collapse.csv", folder / "run.csv")
    master, slave = pty.openpty()
    try:
        o = e.run("watch", str(folder / "run.csv"), "--max-polls", "2", "--interval", "0",
                  stdout=slave)
    finally:
        os.close(slave)
        os.close(master)
    return judge("watch runs/[/b]/run.csv on a terminal", o, {0})


def watch_rewrite(e: Env) -> Verdict:
    code = ("import os, sys; from grpo_doctor.watch import Watcher; "
            "w = Watcher('run.csv'); n = len(w.poll())\n"
            "for _ in range(3):\n"
            "    open('t.csv', 'w').write(open('run.csv').read()); os.replace('t.csv', 'run.csv');"
            " n += len(w.poll())\nprint(n)")
    shutil.copy(EXAMPLES / "entropy-collapse.csv", e.dir / "run.csv")
    p = subprocess.run([sys.executable, "-c", code], cwd=e.dir, env=e.env, capture_output=True,
                       text=True, timeout=e.timeout)
    alerts = int(p.stdout.strip() or -1)
    return Verdict("watch: log rewritten 3 times", f"{alerts} alerts (2 findings)",
                   [] if alerts == 2 else ["repeated alerts"])


# --- round three (issue 24): keys, YAML bombs, SQLite types, shard records, hooks ------------


def same_file_names_baseline(e: Env) -> Verdict:
    for k, name in enumerate(("healthy", "entropy-collapse", "entropy-collapse")):
        e.copy(EXAMPLES / f"{name}.csv", f"runs/v{k}/metrics.csv")
    e.run("audit", "runs/v0/metrics.csv", "runs/v1/metrics.csv", "--write-baseline", "b.json")
    o = e.run("audit", "runs/v0/metrics.csv", "runs/v1/metrics.csv", "runs/v2/metrics.csv",
              "--baseline", "b.json", "--fail-on", "warning")
    return judge("v0..v2/metrics.csv against a baseline of v0, v1", o, {1},
                 extra=[] if o.code == 1 else ["new finding of v2 missed"])


def yaml_bomb(e: Env) -> Verdict:
    lines = ["l0: &l0 [" + ", ".join(["lol"] * 9) + "]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 9)]
    run = e.dir / "mlruns" / "1" / "abc"
    (run / "metrics").mkdir(parents=True)
    (e.dir / "mlruns" / "1" / "meta.yaml").write_text("experiment_id: '1'\nname: x\n")
    (run / "meta.yaml").write_text("run_id: abc\n" + "\n".join(lines) + "\nrun_name: *l8\n")
    (run / "metrics" / "reward_mean").write_text("".join(f"0 0.5 {k}\n" for k in range(50)))
    o = e.run("diagnose", "mlruns", "-f", "json", timeout=60)
    return judge("MLflow meta.yaml alias bomb (1 KB)", o, {0, 1, 2},
                 extra=[] if o.seconds < 30 else ["slow"])


def sqlite_text_is_nan(e: Env) -> Verdict:
    import sqlite3

    conn = sqlite3.connect(e.dir / "mlflow.db")
    conn.executescript(
        "CREATE TABLE experiments (experiment_id, name, lifecycle_stage);"
        "CREATE TABLE runs (run_uuid, name, experiment_id, lifecycle_stage);"
        "CREATE TABLE metrics (key, value, timestamp, run_uuid, step, is_nan);"
        "CREATE TABLE params (key, value, run_uuid); CREATE TABLE tags (key, value, run_uuid);"
        "INSERT INTO experiments VALUES (0, 'x', 'active');"
        "INSERT INTO runs VALUES (1, 1, 0, 'active');")
    conn.executemany("INSERT INTO metrics VALUES ('reward_mean', 0.5, 0, '1', ?, '0')",
                     [(str(k),) for k in range(60)])
    conn.commit()
    conn.close()
    o = e.run("diagnose", "mlflow.db", "-f", "json")
    fake = '"status": "critical"' in o.out
    return judge("MLflow cells of other types (text is_nan '0')", o, {0},
                 extra=["fabricated NaN"] if fake else [])


def shard_records(e: Env) -> Verdict:
    e.copy(EXAMPLES / "healthy.csv", "runs/h.csv")
    o = e.run("audit", "runs", "-f", "json", "--shard", "1/1")
    doc = json.loads(o.out)
    codes = []
    for bad in ([1], {}, {**doc["runs"][0], "status": "bogus"}):
        (e.dir / "s.json").write_text(json.dumps({**doc, "runs": [bad]}))
        codes.append(e.run("audit-merge", "s.json"))
    problems = [p for c in codes for p in judge("", c, {2}).problems]
    return Verdict("audit-merge of bad shard records", f"exits {[c.code for c in codes]}",
                   sorted(set(problems)))


def callback_hooks(e: Env) -> Verdict:
    code = ("from types import SimpleNamespace as S\n"
            "from grpo_doctor.integrations.trl import DoctorCallback\n"
            "from grpo_doctor.config import Settings\n"
            "d = DoctorCallback(every_n_steps=1, print_alerts=False,"
            " settings=Settings(column_map={'heldout_score': 'eval_accuracy'}))\n"
            "st = S(global_step='x', log_history=[{'step': 'ten'}, 5], is_world_process_zero=1)\n"
            "for h in [n for n in dir(d) if n.startswith('on_')]:\n"
            "    getattr(d, h)(None, st, None, logs=[1], metrics=None)\n"
            "for k in range(1, 30):\n"
            "    d.on_log(None, S(global_step=k, log_history=[]), None, logs={'entropy': 0.5})\n"
            "print('alive')\n")
    p = subprocess.run([sys.executable, "-W", "ignore", "-c", code], cwd=e.dir, env=e.env,
                       capture_output=True, text=True, timeout=e.timeout)
    if "No module named 'transformers'" in p.stderr:
        return Verdict("DoctorCallback hooks with hostile logs", "skipped (no transformers)", [])
    alive = p.returncode == 0 and "alive" in p.stdout
    return Verdict("DoctorCallback hooks with hostile logs", "training goes on" if alive
                   else p.stderr.strip().splitlines()[-1:][0][:90], [] if alive else ["raised"])


def set_divisor_zero(e: Env) -> Verdict:
    return judge("--set grad_explosion.burst_ratio=0",
                 e.run(*HEALTHY, "--set", "grad_explosion.burst_ratio=0"), {2})


def stdout_closed(e: Env) -> Verdict:
    p = subprocess.run([sys.executable, "-m", "grpo_doctor", "diagnose", "--example",
                        "healthy"], cwd=e.dir, env=e.env, stderr=subprocess.PIPE,
                       preexec_fn=lambda: os.close(1), timeout=e.timeout)
    return judge("diagnose >&-", Outcome(p.returncode, "", p.stderr.decode(), 0.0), {0})


# --- round three, item 10 (issue 24): not compared, narrow terminals, rewrites, ENXIO ----------


def _shifted_csv(source: Path, target: Path, by: int) -> None:
    """``source`` (an example CSV, the step first) with every step moved by ``by``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    lines = source.read_text().splitlines()
    rows = [line.split(",", 1) for line in lines[1:]]
    target.write_text("\n".join([lines[0], *(f"{int(s) + by},{rest}" for s, rest in rows)])
                      + "\n")


def compare_no_shared_steps(e: Env) -> Verdict:
    shutil.copy(EXAMPLES / "healthy.csv", e.dir / "a.csv")
    _shifted_csv(EXAMPLES / "healthy.csv", e.dir / "b.csv", 100_000)
    o = e.run("compare", "a.csv", "b.csv", env={"COLUMNS": "100"})
    said = "not compared" in o.out and "agree" not in o.out
    return judge("compare of runs sharing no step", o, {0},
                 extra=[] if said else ["said the runs agree"])


def narrow_terminal_onsets(e: Env) -> Verdict:
    for name in ("likelihood-displacement", "entropy-collapse", "grad-explosion"):
        _shifted_csv(EXAMPLES / f"{name}.csv", e.dir / "runs" / f"{name}.csv", 0)
        _shifted_csv(EXAMPLES / f"{name}.csv", e.dir / "big" / f"{name}.csv", 10**15)
    cut = []
    for folder in ("runs", "big"):
        doc = json.loads(e.run("audit", folder, "-f", "json").out)
        onsets = {f"{c['onset_step']:,}" for r in doc["runs"] for c in r["checks"]
                  if c["status"] in ("warning", "critical")}
        for width in (40, 45, 52, 59):
            o = e.run("audit", folder, env={"COLUMNS": str(width)})
            shown = {n.rstrip(",") for n in re.findall(r"\d[\d,]*", o.out)}
            cut += [f"{n} at {width}" for n in sorted(onsets - shown)]
            cut += [f"a line over {width}"] * any(len(x) > width for x in o.out.splitlines())
    return Verdict("audit at 40-59 columns", f"{len(cut)} onsets cut",
                   ["number cut"] if cut else [])


def watch_same_size_mtime_restored(e: Env) -> Verdict:
    code = ("import os, sys; from grpo_doctor.watch import Watcher; w = Watcher('run.csv')\n"
            "w.poll(); before = w.status; st = os.stat('run.csv')\n"
            "import time; time.sleep(0.05)\n"
            "open('run.csv', 'r+').write(open('flat.csv').read())\n"
            "os.utime('run.csv', ns=(st.st_atime_ns, st.st_mtime_ns)); w.poll()\n"
            "print(before, w.status)")
    import math

    def log(entropy: Callable[[int], float]) -> str:  # every value 6 characters wide
        return "step,train/entropy,train/reward\n" + "".join(
            f"{i},{entropy(i):.4f},{0.5 + 0.01 * math.sin(i):.4f}\n" for i in range(1, 161))

    text = log(lambda i: 0.9 * math.exp(-max(0, i - 60) / 15) + 0.01)
    (e.dir / "run.csv").write_text(text)
    (e.dir / "flat.csv").write_text(log(lambda i: 0.99))
    if len((e.dir / "flat.csv").read_bytes()) != len(text.encode()):
        return Verdict("watch: same-size rewrite, mtime put back", "harness: sizes differ",
                       ["harness"])
    p = subprocess.run([sys.executable, "-c", code], cwd=e.dir, env=e.env, capture_output=True,
                       text=True, timeout=e.timeout)
    seen = p.stdout.split() == ["critical", "healthy"]
    return Verdict("watch: same-size rewrite, mtime put back", p.stdout.strip() or p.stderr[-90:],
                   [] if seen else ["rewrite not read"])


def watch_garbage_moment(e: Env) -> Verdict:
    shutil.copy(EXAMPLES / "entropy-collapse.csv", e.dir / "run.csv")
    code = ("import shutil; from grpo_doctor.watch import run_watch, Watcher\n"
            "moments = iter([lambda: open('run.csv', 'wb').write(bytes(range(256)) * 40),\n"
            "                lambda: shutil.copy('good.csv', 'run.csv')])\n"
            "raise SystemExit(run_watch(Watcher('run.csv'), interval=0, max_polls=3,"
            " live=False, sleep=lambda _: next(moments)()))")
    shutil.copy(EXAMPLES / "healthy.csv", e.dir / "good.csv")
    p = subprocess.run([sys.executable, "-c", code], cwd=e.dir, env=e.env, capture_output=True,
                       text=True, timeout=e.timeout)
    return judge("watch: garbage for one poll mid-rewrite",
                 Outcome(p.returncode, p.stdout, p.stderr, 0.0), {0})


@needs_root
def output_tty_without_driver(e: Env) -> Verdict:
    e.device("ttyS191", 4, 255)  # a serial line the driver does not have: ENXIO
    o = e.run(*HEALTHY, "-o", "ttyS191")
    return judge("-o <terminal device with no driver>", o, {2},
                 extra=["called a FIFO"] if "FIFO" in o.err else [])


@needs_root
def output_tty_no_controlling_terminal(e: Env) -> Verdict:
    e.device("tty", 5, 0)  # /dev/tty's numbers; the case runs in a session of its own
    o = e.run(*HEALTHY, "-o", "tty")
    return judge("-o <tty> with no controlling terminal", o, {2},
                 extra=["called a FIFO"] if "FIFO" in o.err else [])


def shard_empty(e: Env) -> Verdict:
    e.copy(EXAMPLES / "healthy.csv", "runs/h.csv")
    return judge("audit --shard ''", e.run("audit", "runs", "--shard", ""), {2})


CASES: list[Callable[[Env], Verdict]] = [
    output_null_device, output_full_device, output_mem_device, output_fifo_no_reader,
    output_fifo_reader, output_socket, output_dev_stdout, concurrent_baselines,
    audit_html_used_folder, workflow_injection, escapes_in_names, fifo_inputs,
    endless_device_input, parquet_100m_rows, ctrl_c_audit, steps_beyond_int64, steps_2p62,
    steps_half, duplicate_entropy, ignore_everything, invalid_pyproject, set_nan,
    set_unknown_rule, ascii_stdout, stdout_full, grad_near_max_float, deep_baseline, deep_tree,
    linked_run_folder, watch_markup_path_on_a_terminal, watch_rewrite,
    same_file_names_baseline, yaml_bomb, sqlite_text_is_nan, shard_records, callback_hooks,
    set_divisor_zero, stdout_closed, compare_no_shared_steps, narrow_terminal_onsets,
    watch_same_size_mtime_restored, watch_garbage_moment, output_tty_without_driver,
    output_tty_no_controlling_terminal, shard_empty,
]


def run_cases(package_root: Path | None = None, timeout: float = 120.0,
              only: str | None = None) -> int:
    """Run every case; print a table; 1 if any has a problem."""
    failed = 0
    width = max(len(c.__name__) for c in CASES)
    for fn in CASES:
        if only and only not in fn.__name__:
            continue
        if getattr(fn, "needs_root", False) and not IS_ROOT:
            print(f"{fn.__name__:<{width}}  skipped (needs root for mknod)")
            continue
        folder = Path(tempfile.mkdtemp(prefix="grpo-doctor-env-"))
        try:
            verdict = fn(Env(folder, package_root, timeout))
        except Exception as exc:  # the harness itself: report, go on
            verdict = Verdict(fn.__name__, f"harness error: {type(exc).__name__}: {exc}",
                              ["harness"])
        finally:
            remove_tree(folder)
        failed += bool(verdict.problems)
        mark = "ok " if not verdict.problems else "BAD"
        problems = f"  [{', '.join(verdict.problems)}]" if verdict.problems else ""
        print(f"{fn.__name__:<{width}}  {mark}  {verdict.case}: {verdict.summary}{problems}",
              flush=True)
    print(f"{failed} case(s) with a problem")
    return 1 if failed else 0
