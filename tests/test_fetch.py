"""`grpo-doctor fetch` and `wandb://` sources: the real wandb client against a local server.

Every test points ``wandb.Api`` (and the wandb-core service it starts) at ``FakeWandb`` on
127.0.0.1 with a dummy key, with HOME, WANDB_DIR, WANDB_CONFIG_DIR and WANDB_CACHE_DIR in a
tmp folder and small retry bounds, so nothing leaves the machine and failures take seconds.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pandas as pd
import pytest

from grpo_doctor.cli import main
from grpo_doctor.errors import FetchError, InputError
from grpo_doctor.remote import wandb_api
from grpo_doctor.sources import load_runs
from tests.wandb_server import FakeRun, FakeWandb, make_rows

KEY = "0123456789abcdef0123456789abcdef01234567"  # a dummy 40-character API key
N = 1234  # more than run.history()'s 500-row sample
RUN = "ent/proj/abc12345"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def env(tmp_path, monkeypatch):
    """An isolated wandb: no real home, no real credentials, a loopback base URL."""
    for name in list(os.environ):
        if name.startswith(("WANDB_", "GRPO_DOCTOR_")) or name in ("NETRC", "XDG_CACHE_HOME",
                                                                  "XDG_CONFIG_HOME"):
            monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb"))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb-config"))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "wandb-cache"))
    monkeypatch.setenv("WANDB_API_KEY", KEY)
    # Nothing listens here: a test that forgets its server is refused, never sent elsewhere.
    monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{_free_port()}")
    monkeypatch.setenv("GRPO_DOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GRPO_DOCTOR_WANDB_RETRIES", "2")
    monkeypatch.setenv("GRPO_DOCTOR_WANDB_BACKOFF", "0.05")
    monkeypatch.setenv("GRPO_DOCTOR_WANDB_MAX_BACKOFF", "1")
    monkeypatch.setenv("GRPO_DOCTOR_WANDB_TIMEOUT", "1")
    monkeypatch.setenv("GRPO_DOCTOR_WANDB_DOWNLOAD_TIMEOUT", "1")
    monkeypatch.setenv("GRPO_DOCTOR_WANDB_MAX_RETRY_AFTER", "3")
    yield tmp_path
    import wandb

    wandb.teardown()  # a fresh wandb (settings, session, service) for the next test
    assert not any(home.rglob("*.parquet")), "nothing may be fetched into HOME"


@pytest.fixture
def server(env, monkeypatch):
    fake = FakeWandb()
    url = fake.start()
    assert urlparse(url).hostname == "127.0.0.1"
    monkeypatch.setenv("WANDB_BASE_URL", url)
    yield fake
    fake.stop()


@pytest.fixture(autouse=True)
def _loopback_only():
    yield
    base = os.environ.get("WANDB_BASE_URL")
    assert base is None or urlparse(base).hostname in ("127.0.0.1", "localhost")


def grpo_run(**kw) -> FakeRun:
    args: dict[str, Any] = {
        "entity": "ent", "project": "proj", "run_id": "abc12345", "rows": make_rows(N),
        "config": {"learning_rate": 5e-6, "beta": 0.04, "num_generations": 8},
        "summary": {"train/reward": 0.57, "_step": N - 1}, "display_name": "grpo-qwen",
        "history": "split",
    }
    args.update(kw)
    return FakeRun(**args)


def cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def cache_files(env: Path) -> list[str]:
    root = env / "cache"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) \
        if root.exists() else []


# --- happy paths ---------------------------------------------------------------------------


def test_fetch_run_full_history_config_and_summary(server, env):
    server.add_run(grpo_run())
    path = wandb_api.fetch_run("ent", "proj", "abc12345", cache_dir=env / "cache")
    assert path == env / "cache" / "ent" / "proj" / "abc12345.parquet"
    assert cache_files(env) == ["ent/proj/abc12345.json", "ent/proj/abc12345.parquet"]
    # Half the history came from the exported parquet file, half paged live: none sampled.
    assert server.count("file") == 1 and server.count("history_page") >= 1
    assert server.count("sampled_history") == 0

    frame = pd.read_parquet(path)
    assert len(frame) == N and frame["_step"].tolist() == list(range(N))
    meta = json.loads(path.with_suffix(".json").read_text())
    assert set(meta) == {"name", "id", "state", "config", "summary", "fetched_at", "url", "rows",
                         "notes"}
    assert meta["notes"] == []
    assert meta["name"] == "grpo-qwen" and meta["id"] == "abc12345"
    assert meta["state"] == "finished" and meta["rows"] == N
    assert meta["config"] == {"learning_rate": 5e-6, "beta": 0.04, "num_generations": 8}
    assert meta["summary"]["train/reward"] == 0.57
    assert meta["url"] == f"{server.base_url}/ent/proj/runs/abc12345"

    (run,) = wandb_api.load_cached(path, wandb_api.LoadOptions())
    assert run.n_steps == N and run.first_step == 0 and run.last_step == N - 1
    assert run.config["learning_rate"] == 5e-6 and run.name == "grpo-qwen"
    assert run.has("entropy") and run.has("kl")


def test_second_fetch_of_a_finished_run_is_served_from_the_cache(server, env, capsys,
                                                                  monkeypatch):
    server.add_run(grpo_run())
    code, out, err = cli(capsys, "fetch", RUN, "--out", str(env / "cache"))
    assert code == 0 and err == ""
    path = env / "cache" / "ent" / "proj" / "abc12345.parquet"
    assert out == f"{RUN}: {N} rows fetched -> {path}\n"
    before = server.count()
    monkeypatch.delenv("WANDB_API_KEY")  # the cache needs neither credentials nor network
    code, out, err = cli(capsys, "fetch", RUN, "--out", str(env / "cache"))
    assert code == 0 and out == f"{RUN}: {N} rows cached -> {path}\n"
    assert server.count() == before  # zero new requests


def test_running_run_is_fetched_again_and_refresh_forces(server, env):
    live = server.add_run(grpo_run(state="running", history="live"))
    wandb_api.fetch_run("ent", "proj", "abc12345")
    before = server.count("run")
    live.rows = make_rows(N + 100)
    path = wandb_api.fetch_run("ent", "proj", "abc12345")
    assert server.count("run") == before + 1
    assert len(pd.read_parquet(path)) == N + 100
    live.state = "finished"
    wandb_api.fetch_run("ent", "proj", "abc12345")
    n = server.count()
    wandb_api.fetch_run("ent", "proj", "abc12345")
    assert server.count() == n
    wandb_api.fetch_run("ent", "proj", "abc12345", refresh=True)
    assert server.count("run") > before + 2


def test_the_importers_read_files_and_leave_wandb_uris_to_the_package():
    """The importers sit below the W&B client: a wandb:// URI is fetched by
    ``grpo_doctor.sources`` (what ``grpo_doctor.load_runs`` is), which hands them its cache."""
    from grpo_doctor import importers

    with pytest.raises(InputError, match=r"grpo_doctor\.load_runs reads it"):
        importers.load_runs("wandb://ent/proj/abc12345")
    import grpo_doctor

    assert grpo_doctor.load_runs is load_runs


def test_diagnose_a_wandb_uri(server, capsys):
    server.add_run(grpo_run())
    code, out, err = cli(capsys, "diagnose", "wandb://ent/proj/abc12345", "--format", "json")
    assert code in (0, 1) and err == ""
    report = json.loads(out)
    assert report["run"]["name"] == "grpo-qwen" and report["run"]["n_steps"] == N
    assert report["run"]["format"] == "parquet"
    runs = load_runs("wandb://ent/proj/abc12345")
    assert len(runs) == 1 and runs[0].config["beta"] == 0.04


def test_compare_wandb_uris(server, capsys):
    server.add_run(grpo_run())
    server.add_run(grpo_run(run_id="def67890", display_name="grpo-qwen-lr30x",
                            config={"learning_rate": 1.5e-4, "beta": 0.04,
                                    "num_generations": 8}))
    code, out, err = cli(capsys, "compare", "wandb://ent/proj/abc12345",
                         "wandb://ent/proj/def67890", "--format", "json")
    assert code == 0 and err == ""
    d = json.loads(out)
    assert [r["name"] for r in d["runs"]] == ["grpo-qwen", "grpo-qwen-lr30x"]
    assert d["config_diff"]["learning_rate"] == [5e-6, 1.5e-4]
    assert d["metrics"]["reward_mean"]["diverges_at"] is None  # the same rows: no parting


def test_fetch_project_with_filters(server, env, capsys):
    days = ["2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04", "2026-01-05", "2026-01-06"]
    specs = [("run00001", "finished", ["grpo", "qwen"]), ("run00002", "finished", ["grpo"]),
             ("run00003", "crashed", ["grpo", "qwen"]), ("run00004", "finished", ["grpo", "qwen"]),
             ("run00005", "finished", ["grpo", "qwen"]), ("run00006", "finished", ["grpo", "qwen"])]
    for (run_id, state, tags), day in zip(specs, days):
        server.add_run(grpo_run(run_id=run_id, state=state, tags=tags, rows=make_rows(600),
                                created_at=f"{day}T09:00:00Z", history="parquet"))
    code, out, err = cli(capsys, "fetch", "ent/proj", "--state", "finished", "--tag", "grpo",
                         "--tag", "qwen", "--since", "2026-01-02", "--limit", "2", "--jobs", "2",
                         "--out", str(env / "cache"))
    assert code == 0 and err == ""
    folder = env / "cache" / "ent" / "proj"
    assert sorted(out.splitlines()) == [
        f"ent/proj/run00005: 600 rows fetched -> {folder / 'run00005.parquet'}",
        f"ent/proj/run00006: 600 rows fetched -> {folder / 'run00006.parquet'}",
    ]
    filters = json.loads(next(v for k, _, v, _ in server.requests if k == "runs")["filters"])
    assert filters == {"$and": [{"state": "finished"}, {"tags": {"$in": ["grpo"]}},
                                {"tags": {"$in": ["qwen"]}},
                                {"createdAt": {"$gte": "2026-01-02T00:00:00"}}]}
    # The whole project, 3 at a time: the two cached runs are not fetched again.
    before = server.count("run")
    paths = wandb_api.fetch_project("ent", "proj", jobs=3)
    assert [p.stem for p in paths] == [f"run0000{i}" for i in (6, 5, 4, 3, 2, 1)]
    assert server.count("run") == before + 4
    runs = load_runs("wandb://ent/proj", run="grpo-qwen")
    assert len(runs) == 6 and all(r.n_steps == 600 for r in runs)


def test_fetch_then_diagnose(server, env, capsys):
    server.add_run(grpo_run())
    code, out, err = cli(capsys, "fetch", RUN, "--diagnose", "--fail-on", "never")
    assert code == 0 and err == ""
    assert out.startswith(f"{RUN}: {N} rows fetched -> ") and "grpo-qwen" in out


def test_filters_do_not_apply_to_one_run(env, capsys):
    code, out, err = cli(capsys, "fetch", RUN, "--state", "finished")
    assert code == 2 and err == ("grpo-doctor: error: --state, --tag, --since and --limit "
                                 "select runs of a project; they do not apply to one run\n")


# --- names never become paths unsanitised --------------------------------------------------


@pytest.mark.parametrize("target,message", [
    ("ent/../abc12345", "invalid wandb project '..': only letters, digits, '.', '_' and '-' "
                        "are allowed (at most 128, not starting with '.' or '-')"),
    ("/etc/passwd", "'/etc/passwd': expected ENTITY/PROJECT or ENTITY/PROJECT/RUN_ID"),
    ("ent/proj/a b", "invalid wandb run id 'a b': only letters, digits, '.', '_' and '-' are "
                     "allowed (at most 128, not starting with '.' or '-')"),
])
def test_unsafe_names_are_rejected(env, capsys, target, message):
    code, out, err = cli(capsys, "fetch", target)
    assert (code, out, err) == (2, "", f"grpo-doctor: error: {message}\n")
    assert cache_files(env) == []


def test_unsafe_run_id_from_the_server_is_rejected(server, env):
    server.add_run(grpo_run(run_id="good1234", history="parquet"))
    server.add_run(grpo_run(run_id="../../escape", history="parquet"))
    with pytest.raises(FetchError) as exc:
        wandb_api.fetch_project("ent", "proj")
    assert str(exc.value) == (
        "1 of 2 runs of ent/proj failed (1 fetched): invalid wandb run id '../../escape': only "
        "letters, digits, '.', '_' and '-' are allowed (at most 128, not starting with '.' or "
        "'-')")
    assert cache_files(env) == ["ent/proj/good1234.json", "ent/proj/good1234.parquet"]
    assert not list(env.rglob("escape*"))


# --- failures: one line each, exit code 2 ------------------------------------------------


def test_missing_credentials(server, env, capsys, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY")  # and HOME is empty: no netrc
    code, out, err = cli(capsys, "fetch", RUN)
    assert (code, out) == (2, "")
    host = urlparse(server.base_url).netloc
    assert err == (f"grpo-doctor: error: no W&B credentials for {server.base_url}: set "
                   f"WANDB_API_KEY, or run `wandb login` (it writes a netrc entry for {host})\n")
    assert server.count() == 0


def test_netrc_credentials_are_used(server, env, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY")
    netrc = Path(os.environ["HOME"]) / ".netrc"
    host = urlparse(server.base_url).netloc  # wandb's netrc machine is host:port
    netrc.write_text(f"machine {host}\n  login user\n  password {KEY}\n")
    netrc.chmod(0o600)
    server.add_run(grpo_run(history="parquet"))
    assert wandb_api.fetch_run("ent", "proj", "abc12345").exists()


def test_unknown_run(server, capsys):
    server.add_run(grpo_run())
    code, out, err = cli(capsys, "fetch", "ent/proj/nope1234")
    assert (code, out) == (2, "")
    assert err == (f"grpo-doctor: error: ent/proj/nope1234: no such run on {server.base_url} "
                   "(use the run id from the run's URL, not its display name)\n")


def test_unknown_project(server, capsys):
    code, out, err = cli(capsys, "diagnose", "wandb://ent/nope")
    assert (code, out) == (2, "")
    assert err == (f"grpo-doctor: error: ent/nope: no such project on {server.base_url}, or "
                   "not visible with this API key\n")


def test_connection_refused(env, capsys):
    url = os.environ["WANDB_BASE_URL"]  # nothing listens there
    code, out, err = cli(capsys, "fetch", RUN, "--retries", "1")
    assert (code, out) == (2, "")
    assert err == (f"grpo-doctor: error: cannot connect to the W&B server at {url}: "
                   "connection refused after 2 attempts\n")
    assert cache_files(env) == []


def test_expired_key(server, capsys):
    server.auth_ok = lambda header: False
    code, out, err = cli(capsys, "fetch", RUN)
    assert (code, out) == (2, "")
    assert err == (f"grpo-doctor: error: the W&B server at {server.base_url} rejected the API "
                   "key (HTTP 401): it is invalid or expired; run `wandb login --relogin` or "
                   "set WANDB_API_KEY\n")
    assert server.count() == 1


def test_server_errors_are_retried(server, env):
    server.add_run(grpo_run())
    server.fail("run", status=500, times=1)
    server.fail("file", status=503, times=1)
    path = wandb_api.fetch_run("ent", "proj", "abc12345")
    assert len(pd.read_parquet(path)) == N
    assert server.count("run") == 2 and server.count("file") == 2


def test_server_errors_are_bounded(server, env, capsys):
    server.add_run(grpo_run())
    server.fail("run", status=502, times=100)
    code, out, err = cli(capsys, "fetch", RUN)
    assert (code, out) == (2, "")
    assert err == ("grpo-doctor: error: ent/proj/abc12345: the W&B server failed (HTTP 502) "
                   "after 3 attempts\n")
    assert server.count("run") == 3 and cache_files(env) == []


def test_rate_limit_honours_retry_after(server):
    server.add_run(grpo_run())
    server.fail("run", status=429, times=1, headers={"Retry-After": "2"},
                body=b'{"errors":[{"message":"rate limit exceeded"}]}')
    wandb_api.fetch_run("ent", "proj", "abc12345")
    first, second = server.times("run")[:2]
    assert second - first >= 1.9  # the backoff alone would have been 1 s


def test_rate_limit_is_bounded(server, env, capsys):
    server.add_run(grpo_run())
    server.fail("run", status=429, times=100, headers={"Retry-After": "1"},
                body=b'{"errors":[{"message":"rate limit exceeded"}]}')
    start = time.monotonic()
    code, out, err = cli(capsys, "fetch", RUN)
    assert (code, out) == (2, "")
    assert err == ("grpo-doctor: error: ent/proj/abc12345: rate limited by the W&B server "
                   "(HTTP 429) after 3 attempts; try again later or with --jobs 1\n")
    assert server.count("run") == 3 and time.monotonic() - start < 15


def test_connection_cut_mid_download(server, env, capsys):
    server.add_run(grpo_run(history="parquet"))
    server.fail("file", action="truncate", times=100)
    code, out, err = cli(capsys, "fetch", RUN)
    assert (code, out) == (2, "")
    assert err == (f"grpo-doctor: error: ent/proj/abc12345: the connection to "
                   f"{server.base_url} was cut during the download (3 attempts)\n")
    assert server.count("file") == 3
    assert cache_files(env) == []  # nothing half-written


def test_connection_cut_once_is_retried(server, env):
    server.add_run(grpo_run(history="parquet"))
    server.fail("file", action="truncate", times=1)
    path = wandb_api.fetch_run("ent", "proj", "abc12345")
    assert len(pd.read_parquet(path)) == N and server.count("file") == 2


def test_download_timeout(server, env, capsys):
    server.add_run(grpo_run(history="parquet"))
    server.fail("file", action="stall", seconds=3, times=100)
    code, out, err = cli(capsys, "fetch", RUN, "--retries", "1")
    assert (code, out) == (2, "")
    assert err == (f"grpo-doctor: error: ent/proj/abc12345: the W&B server at "
                   f"{server.base_url} did not send the history file within 1 s after 2 "
                   "attempts\n")
    assert cache_files(env) == []


def test_request_timeout(server, env, capsys):
    server.add_run(grpo_run())
    server.fail("run", action="stall", seconds=3, times=100)
    code, out, err = cli(capsys, "fetch", RUN, "--retries", "1")
    assert (code, out) == (2, "")
    assert err == (f"grpo-doctor: error: ent/proj/abc12345: the W&B server at "
                   f"{server.base_url} did not answer within 1 s after 2 attempts\n")


def test_interrupted_fetch_leaves_the_cache_consistent(server, env, capsys, monkeypatch):
    server.add_run(grpo_run())
    real_write = wandb_api.write_atomic

    def write_then_interrupt(path, data, **kwargs):
        if str(path).endswith(".json"):
            raise KeyboardInterrupt
        return real_write(path, data, **kwargs)

    monkeypatch.setattr(wandb_api, "write_atomic", write_then_interrupt)
    code, out, err = cli(capsys, "fetch", RUN)
    assert code == 130
    assert cache_files(env) == ["ent/proj/abc12345.parquet"]  # complete, but not yet a run
    parquet = env / "cache" / "ent" / "proj" / "abc12345.parquet"
    assert wandb_api.read_cached_meta(parquet) is None

    monkeypatch.setattr(wandb_api, "write_atomic", real_write)
    before = server.count("run")
    code, out, err = cli(capsys, "fetch", RUN)
    assert code == 0 and server.count("run") == before + 1  # fetched again, not trusted
    assert cache_files(env) == ["ent/proj/abc12345.json", "ent/proj/abc12345.parquet"]


# --- hostile histories and servers (issue 14) ------------------------------------------------


def _jump(offset: int) -> list[dict[str, Any]]:
    """1,000 steps, then 1,000 more starting at ``offset``: a history with a huge empty span."""
    rows = make_rows(1000)
    return rows + [dict(r, _step=offset + r["_step"]) for r in make_rows(1000)]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("offset,history", [(10**7, "live"), (2**62, "split"),
                                            (2**62, "parquet")])
def test_fetch_pages_over_steps_that_exist(server, env, offset, history):
    server.add_run(grpo_run(rows=_jump(offset), history=history))
    path = wandb_api.fetch_run("ent", "proj", "abc12345", cache_dir=env / "cache")
    steps = pd.read_parquet(path)["_step"].tolist()
    assert steps == list(range(1000)) + [offset + i for i in range(1000)]
    assert server.count("history_page") <= 3  # not one per thousand steps of the gap


def test_fetch_refuses_a_history_too_sparse_to_tabulate(server, env, capsys):
    server.add_run(grpo_run(rows=[{"_step": i, f"k{i}": 1.0} for i in range(12_000)],
                            history="live"))
    code, out, err = cli(capsys, "fetch", RUN)
    assert (code, out) == (2, "")
    assert err == ("grpo-doctor: error: ent/proj/abc12345: 12,000 steps x 12,001 metrics "
                   "holding 24,000 values is too sparse to tabulate (not a training log?)\n")
    assert cache_files(env) == []


@pytest.mark.parametrize("body", [
    b"<!DOCTYPE html><html><head><title>Hotel Wi-Fi</title></head><body>Log in</body></html>",
    bytes(range(256)) * 8,
])
def test_a_server_that_is_not_wandb_is_not_a_rejected_key(server, env, capsys, body):
    server.add_run(grpo_run())
    server.fail("any", status=200, body=body, headers={"Content-Type": "text/html"},
                times=1000)
    code, out, err = cli(capsys, "fetch", RUN)
    assert (code, out) == (2, "")
    assert err == (f"grpo-doctor: error: the server at {server.base_url} did not answer as a "
                   f"W&B server (not JSON: a captive portal, a proxy's login page or another "
                   f"service at that address?); check WANDB_BASE_URL and the network\n")


def test_a_history_past_the_read_limit_is_refused_as_its_pages_arrive(server, env, capsys,
                                                                      monkeypatch):
    """History pages were size-checked only once all had come (5.4 GB, 231 s before the
    refusal): the page that takes the rows past GRPO_DOCTOR_MAX_READ_MB is the last asked."""
    rows = make_rows(5000)
    page = len(json.dumps(rows[:1000], separators=(",", ":")))
    monkeypatch.setenv("GRPO_DOCTOR_MAX_READ_MB", str(1.5 * page / (1 << 20)))
    server.add_run(grpo_run(rows=rows, history="live"))
    code, out, err = cli(capsys, "fetch", RUN)
    assert (code, out) == (2, "")
    assert re.fullmatch(r"grpo-doctor: error: ent/proj/abc12345: the history's first 2,000 "
                        r"rows are already \S+ KiB, more than the \S+ KiB grpo-doctor reads "
                        r"into memory \(GRPO_DOCTOR_MAX_READ_MB raises the limit\)\n", err), err
    assert server.count("history_page") == 2  # of 5: the rest never asked for
    assert cache_files(env) == []
    # Under the limit, the same history is fetched whole.
    monkeypatch.setenv("GRPO_DOCTOR_MAX_READ_MB", str(6 * page / (1 << 20)))
    path = wandb_api.fetch_run("ent", "proj", "abc12345", cache_dir=env / "cache")
    assert len(pd.read_parquet(path)) == 5000


@pytest.mark.parametrize("fault, said", [
    ({"status": 200, "body": b'{"data": null}'},
     "did not answer as a W&B server (GraphQL with no viewer in its data: {\"data\": null}); "
     "check WANDB_BASE_URL and the network"),
    ({"status": 200, "body": b'{"data": {"x": "' + b"a" * (3 << 20) + b'"}}'},
     "did not answer as a W&B server (it sent 3.0 MiB in answer to a credential check of a "
     "few hundred bytes); check WANDB_BASE_URL and the network"),
    ({"status": 302, "body": b"", "headers": {"Location": "/graphql"}},
     "answered with redirects, 10 in a row (a loop, or a login page in the way?), not as a "
     "W&B server; check WANDB_BASE_URL and the network"),
], ids=["data-null", "3-MiB", "redirect-loop"])
def test_answers_that_are_not_wandbs_are_not_blamed_on_the_api_key(server, env, capsys,
                                                                    monkeypatch, fault, said):
    """`{"data": null}`, a redirect loop and a 150 MB answer were each "rejected the API key
    (rejected): it is invalid or expired": wandb reports any odd answer to its credential
    check so, but no W&B server answers like that."""
    monkeypatch.setenv("GRPO_DOCTOR_WANDB_TIMEOUT", "30")  # time to read the large answer
    server.add_run(grpo_run())
    server.fail("any", times=1000, **fault)
    code, out, err = cli(capsys, "fetch", RUN)
    assert (code, out) == (2, "")
    assert err == f"grpo-doctor: error: the server at {server.base_url} {said}\n"
    assert cache_files(env) == []


def test_wandbs_own_answer_with_no_viewer_is_still_a_rejected_key(server, env, capsys):
    """The other side: W&B's shape of "not logged in" with no HTTP status stays the key's."""
    server.add_run(grpo_run())
    server.fail("any", status=200, body=b'{"data": {"viewer": null}}', times=1000)
    code, out, err = cli(capsys, "fetch", RUN)
    assert (code, out) == (2, "")
    assert err == (f"grpo-doctor: error: the W&B server at {server.base_url} rejected the API "
                   "key (rejected): it is invalid or expired; run `wandb login --relogin` or "
                   "set WANDB_API_KEY\n")


def test_fetched_steps_beyond_int64_or_fractional_are_dropped_with_a_note(server, env):
    rows = make_rows(300)
    rows[-1] = dict(rows[-1], _step=10**19)
    rows[-2] = dict(rows[-2], _step=297.5)
    server.add_run(grpo_run(rows=rows, history="live"))
    (run,) = load_runs(str(wandb_api.fetch_run("ent", "proj", "abc12345",
                                               cache_dir=env / "cache")))
    assert run.n_steps == 298 and run.last_step == 297
    assert run.notes[:2] == [
        "the W&B server lists 1 row whose step is not a whole number (e.g. 297.5); the "
        "wandb client reads it at the whole step below",
        "1 row at a step beyond the 64-bit integer range (e.g. 1e+19) could not be fetched"]
