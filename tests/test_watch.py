"""``grpo-doctor watch`` and ``grpo_doctor.watch``: real writers appending to logs in a background
thread while the test polls after each write; the Run a poll builds is the Run the importer
builds from the same bytes; alerts carry the first-alert step that ``diagnose`` reports."""

from __future__ import annotations

import io
import json
import os
import queue
import random
import shlex
import shutil
import sys
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from grpo_doctor import diagnose, load_run
from grpo_doctor.findings import Status
from grpo_doctor.monitor import Alert
from grpo_doctor.notifiers import WandbNotifier
from grpo_doctor.store import Run
from grpo_doctor.watch import Watcher, run_watch
from tests.helpers import REAL_RUNS, ar1, run_cli

FIX = Path(__file__).parent / "fixtures"
EXAMPLES = Path(__file__).parent.parent / "grpo_doctor" / "examples"
COLUMNS = ["train/entropy", "train/kl", "train/reward", "train/grad_norm"]


def collapse(n: int = 160, seed: int = 0) -> list[dict[str, float]]:
    """An entropy collapse from step 61 with KL drifting up: findings that, once raised, stay."""
    t = np.arange(n)
    ent = 0.9 * np.exp(-np.clip(t - 60, 0, None) / 15) + 0.01 + np.abs(ar1(seed, n, 0.01))
    kl = 0.02 + 0.04 * np.clip(t - 60, 0, None) + np.abs(ar1(seed + 1, n, 0.01))
    reward = 0.5 + ar1(seed + 2, n, 0.01)
    grad = 0.4 + np.abs(ar1(seed + 3, n, 0.02))
    return [{"step": i + 1, "train/entropy": float(ent[i]), "train/kl": float(kl[i]),
             "train/reward": float(reward[i]), "train/grad_norm": float(grad[i])}
            for i in range(n)]


def follow(watcher: Watcher, write: Callable[[int], None], n: int) -> list[tuple[int, Alert]]:
    """A writer thread appends step ``i`` and waits; the test polls after each write.

    Returns (index of the write, alert) for every alert, so a test can tell at which poll it
    arrived.
    """
    written: queue.Queue[int | BaseException] = queue.Queue()
    resume: queue.Queue[bool] = queue.Queue()

    def writer() -> None:
        try:
            for i in range(n):
                write(i)
                written.put(i)
                if not resume.get(timeout=60):
                    return
        except BaseException as exc:  # surface the writer's failure in the test
            written.put(exc)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    got: list[tuple[int, Alert]] = []
    try:
        for _ in range(n):
            i = written.get(timeout=60)
            if isinstance(i, BaseException):
                raise i
            got += [(i, a) for a in watcher.poll()]
            resume.put(True)
    finally:
        resume.put(False)
        thread.join(timeout=10)
    return got


def assert_alerts_match_offline(got: list[tuple[int, Alert]], steps: list[int], final: Run
                                ) -> None:
    """Per-step polls: every alert came at the step it names, and every finding of
    ``diagnose`` on the finished log was alerted at its first-alert step."""
    got = [(i, a) for i, a in got if not a.revised]  # advice events carry no new finding
    for i, alert in got:
        assert alert.step == steps[i]
        if not alert.escalated and not alert.cleared:
            assert alert.first_alert_step == steps[i], alert
    offline = diagnose(final)
    assert offline.findings, "the scenario should raise findings"
    for check in offline.findings:
        first = next(a for _, a in got if a.mode == check.mode)
        assert first.first_alert_step == check.first_alert_step, (check.mode, first)
        assert first.step == check.first_alert_step
        worst = max((a for _, a in got if a.mode == check.mode and not a.cleared),
                    key=lambda a: a.severity.rank)
        assert worst.severity == check.status


# --- alerts while a real writer appends -----------------------------------------------------------


def test_csv_alerts_arrive_at_the_first_alert_step(tmp_path: Path) -> None:
    rows = collapse()
    path = tmp_path / "run.csv"
    fh = path.open("w")
    fh.write(",".join(["step", *COLUMNS]) + "\n")
    fh.flush()
    watcher = Watcher(path)

    def write(i: int) -> None:
        fh.write(",".join(repr(rows[i][c]) for c in ["step", *COLUMNS]) + "\n")
        fh.flush()

    got = follow(watcher, write, len(rows))
    fh.close()
    final = load_run(path)
    assert_alerts_match_offline(got, [r["step"] for r in rows], final)
    assert {a.mode for _, a in got} >= {"entropy_collapse", "kl_drift"}
    assert watcher.store is not None and watcher.store.rebuilds <= 2  # the rest appended in place
    pd.testing.assert_frame_equal(watcher.run.frame, final.frame, check_exact=True)


def test_jsonl_alerts_with_eval_lines_at_the_same_step(tmp_path: Path) -> None:
    rows = collapse(seed=1)
    path = tmp_path / "metrics.jsonl"
    path.write_text("")
    watcher = Watcher(path)

    def write(i: int) -> None:
        with path.open("a") as fh:
            fh.write(json.dumps(rows[i]) + "\n")
            if i % 20 == 19:  # an eval line at the same step: a repeated step, merged
                fh.write(json.dumps({"step": rows[i]["step"], "eval/loss": 1.0}) + "\n")

    got = follow(watcher, write, len(rows))
    final = load_run(path)
    assert_alerts_match_offline(got, [r["step"] for r in rows], final)
    assert watcher.run.duplicate_steps == final.duplicate_steps == len(rows) // 20
    pd.testing.assert_frame_equal(watcher.run.frame, final.frame, check_exact=True)


def _tb_event(step: int, values: dict[str, float]) -> object:
    from tensorboard.compat.proto import event_pb2, summary_pb2

    return event_pb2.Event(step=step, wall_time=time.time(), summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag=k, simple_value=v) for k, v in values.items()]))


def test_tensorboard_alerts_and_a_new_event_file_is_picked_up(tmp_path: Path) -> None:
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    rows = collapse(seed=0)
    logdir = tmp_path / "runs" / "exp1"
    logdir.mkdir(parents=True)
    writers = [EventFileWriter(str(logdir), filename_suffix=".a")]
    watcher = Watcher(tmp_path / "runs")

    def write(i: int) -> None:
        if i == 100:  # the trainer restarts: a second event file in the same folder
            writers[0].close()
            writers.append(EventFileWriter(str(logdir), filename_suffix=".b"))
        w = writers[-1]
        for tag in COLUMNS:  # one event per scalar, as SummaryWriter.add_scalar writes them
            w.add_event(_tb_event(rows[i]["step"], {tag: rows[i][tag]}))
        w.flush()

    got = follow(watcher, write, len(rows))
    writers[-1].close()
    assert len(list(logdir.glob("*tfevents*"))) == 2
    final = load_run(tmp_path / "runs")
    assert final.restarts == 1 and final.n_steps == len(rows)
    assert watcher.run.n_steps == len(rows) and watcher.run.restarts == 1
    assert_alerts_match_offline(got, [r["step"] for r in rows], final)
    pd.testing.assert_frame_equal(watcher.run.frame, final.frame, check_exact=True)


def test_a_tensorboard_step_flushed_across_two_polls_is_completed_in_place(tmp_path: Path
                                                                            ) -> None:
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    w = EventFileWriter(str(tmp_path))
    watcher = Watcher(tmp_path)
    for step in range(1, 40):
        w.add_event(_tb_event(step, {"train/entropy": 1.0 / step}))
        w.flush()
        watcher.poll()
        w.add_event(_tb_event(step, {"train/kl": 0.1 * step}))
        w.flush()
        watcher.poll()
    w.close()
    assert watcher.store is not None and watcher.store.rebuilds <= 3
    final = load_run(tmp_path)
    pd.testing.assert_frame_equal(watcher.run.frame, final.frame, check_exact=True)


def test_a_partial_last_line_is_not_misread(tmp_path: Path) -> None:
    path = tmp_path / "run.csv"
    path.write_text("step,train/entropy,train/kl\n1,0.9,0.01\n2,0.85,0.02\n")
    watcher = Watcher(path)
    watcher.poll()
    assert list(watcher.run.steps) == [1, 2]
    with path.open("a") as fh:
        fh.write("3,0.12")  # the writer is mid-line: 0.1234 is still being written
    watcher.poll()
    assert list(watcher.run.steps) == [1, 2]
    with path.open("a") as fh:
        fh.write("34,0.03\n4,0.8")
    watcher.poll()
    assert list(watcher.run.steps) == [1, 2, 3]
    assert watcher.run.frame.loc[3, "entropy"] == pytest.approx(0.1234)
    watcher.poll(final=True)  # the log is finished: its last line has no newline
    assert list(watcher.run.steps) == [1, 2, 3, 4]


def test_a_partial_jsonl_line_and_tensorboard_record_wait_for_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    line = json.dumps({"step": 2, "entropy": 0.5}) + "\n"
    path.write_text(json.dumps({"step": 1, "entropy": 0.9}) + "\n" + line[:10])
    watcher = Watcher(path)
    watcher.poll()
    assert list(watcher.run.steps) == [1] and not watcher.run.notes
    with path.open("a") as fh:
        fh.write(line[10:])
    watcher.poll()
    assert list(watcher.run.steps) == [1, 2]

    (src,) = (FIX / "tensorboard" / "simple_value").glob("*tfevents*")
    data = src.read_bytes()
    folder = tmp_path / "tb"
    folder.mkdir()
    copy = folder / src.name
    copy.write_bytes(data[: len(data) // 2 + 7])  # cut inside a record
    tb = Watcher(folder)
    tb.poll()
    seen = tb.run.n_steps
    assert 0 < seen < 200
    copy.write_bytes(data)
    tb.poll()
    assert tb.run.n_steps == 200
    pd.testing.assert_frame_equal(tb.run.frame, load_run(folder).frame, check_exact=True)


def test_a_truncated_log_starts_the_watch_over(tmp_path: Path) -> None:
    path = tmp_path / "run.csv"
    path.write_text("step,entropy\n" + "".join(f"{i},0.5\n" for i in range(1, 30)))
    watcher = Watcher(path)
    watcher.poll()
    path.write_text("step,entropy\n1,0.7\n")  # a new run overwrote the file
    watcher.poll()
    assert watcher.restarts == 1 and list(watcher.run.steps) == [1]


def test_nothing_to_read_yet(tmp_path: Path) -> None:
    watcher = Watcher(tmp_path / "not-yet.csv")
    assert watcher.poll() == [] and watcher.run is None
    (tmp_path / "not-yet.csv").write_text("step,entrop")  # a first line still being written
    assert watcher.poll() == [] and watcher.run is None
    (tmp_path / "not-yet.csv").write_text("step,entropy\n")
    assert watcher.poll() == [] and watcher.run is None  # a header, no rows yet
    empty = tmp_path / "tb"
    empty.mkdir()
    assert Watcher(empty).poll() == []


# --- the Run a poll builds is the importer's Run on the same bytes ------------------------------


def _same_run(a: Run, b: Run) -> None:
    pd.testing.assert_frame_equal(a.frame, b.frame, check_exact=True)
    assert a.mapping == b.mapping and a.step_source == b.step_source
    assert a.duplicate_steps == b.duplicate_steps
    assert {k: list(v) for k, v in a.nan_steps.items()} == \
        {k: list(v) for k, v in b.nan_steps.items()}
    for metric in a.frame.columns:  # the finite series kept up to date alongside
        fresh = Run(name="x", source="x", format="x", frame=a.frame).finite_series(metric)
        for got, want in zip(a.finite_series(metric), fresh):
            assert np.array_equal(got, want), metric


def _grow(path: Path, data: bytes, cuts: list[int], watcher: Watcher) -> int:
    """Append ``data`` in pieces ending at ``cuts``, polling after each; fast polls counted."""
    pos = 0
    fast = 0
    for cut in [*cuts, len(data)]:
        with path.open("ab") as fh:
            fh.write(data[pos:cut])
        pos = cut
        before = watcher.store.rebuilds if watcher.store is not None else 0
        watcher.poll()
        if watcher.run is not None:
            assert watcher.source is not None and watcher.store is not None
            _same_run(watcher.run, watcher.source.rebuild())
            fast += watcher.store.rebuilds == before
    return fast


def _text_logs() -> dict[str, bytes]:
    csv_lines = ["step,train/entropy,train/kl,train/reward,eval/score,done"]
    jsonl_lines = []
    verl_lines = []
    for s in range(1, 250):
        ent = "No Log" if s % 17 == 0 else ("nan" if s % 23 == 0 else f"{1 / (1 + s / 100):.5f}")
        csv_lines.append(f"{s},{ent},{s / 100:.4f},{0.5 + s / 1000:.4f},"
                         f"{'' if s % 10 else 0.3},{'True' if s % 2 else 'False'}")
        if s % 50 == 0:
            csv_lines.append(f"{s},,,,0.4,")  # the same step again: the last number wins
        kl = float("nan") if s % 31 == 0 else s / 100
        jsonl_lines.append(json.dumps({"step": s, "entropy": 1 / (1 + s / 100), "kl": kl}))
        if s % 25 == 0:
            jsonl_lines.append(json.dumps({"step": s, "eval_reward": 0.3}))
        if s % 40 == 0:
            jsonl_lines.append("not json")
        verl_lines.append(f"(main_task pid=1) step:{s} - actor/entropy:{1 / (1 + s / 100):.4f}"
                          f" - actor/kl_loss:{s / 100:.4f}")
        verl_lines.append(f"step:{s} - critic/score/mean:0.5 - response_length/mean:{300 + s}")
    return {name: ("\n".join(lines) + "\n").encode() for name, lines in
            (("run.csv", csv_lines), ("run.jsonl", jsonl_lines), ("verl.log", verl_lines))}


@pytest.mark.parametrize("name", ["run.csv", "run.jsonl", "verl.log"])
def test_text_logs_grown_in_random_pieces_read_as_the_importer_reads_them(tmp_path: Path,
                                                                          name: str) -> None:
    data = _text_logs()[name]
    cuts = sorted(random.Random(name).sample(range(1, len(data)), 80))
    path = tmp_path / name
    path.write_bytes(b"")
    watcher = Watcher(path)
    fast = _grow(path, data, cuts, watcher)
    assert fast >= 70  # nearly every poll appended in place
    _same_run(watcher.run, load_run(path))


@pytest.mark.parametrize("fixture", ["simple_value", "tensor_content", "tensor_float_val"])
def test_tensorboard_files_grown_in_random_pieces(tmp_path: Path, fixture: str) -> None:
    (src,) = (FIX / "tensorboard" / fixture).glob("*tfevents*")
    data = src.read_bytes()
    cuts = sorted(random.Random(fixture).sample(range(1, len(data)), 40))
    (tmp_path / src.name).write_bytes(b"")
    watcher = Watcher(tmp_path)
    assert _grow(tmp_path / src.name, data, cuts, watcher) >= 35
    _same_run(watcher.run, load_run(tmp_path))


def test_a_restarted_tensorboard_run_grown_in_pieces(tmp_path: Path) -> None:
    first, second = sorted((FIX / "tensorboard" / "restart").glob("*tfevents*"))
    shutil.copy(first, tmp_path / first.name)
    data = second.read_bytes()
    (tmp_path / second.name).write_bytes(b"")
    watcher = Watcher(tmp_path)
    _grow(tmp_path / second.name, data, sorted(random.Random(3).sample(range(1, len(data)), 25)),
          watcher)
    _same_run(watcher.run, load_run(tmp_path))
    assert watcher.run.restarts == 1


def test_a_wandb_run_grown_in_pieces(tmp_path: Path) -> None:
    src = next((FIX / "wandb" / "wandb").glob("offline-run-*grpofix1/run-*.wandb"))
    folder = tmp_path / "wandb" / src.parent.name
    folder.mkdir(parents=True)
    data = src.read_bytes()
    (folder / src.name).write_bytes(b"")
    watcher = Watcher(folder)
    fast = _grow(folder / src.name, data, sorted(random.Random(5).sample(range(1, len(data)), 60)),
                 watcher)
    assert fast >= 50
    _same_run(watcher.run, load_run(folder))
    target = watcher.wandb_target()
    assert target is not None and target.run_id == "grpofix1" and target.offline


# --- the command line ---------------------------------------------------------------------------



def test_exit_on_critical_on_a_log_that_is_already_critical(capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    path = str(EXAMPLES / "entropy-collapse.csv")
    code, out, err = run_cli(capsys, "watch", path, "--once", "--exit-on", "critical")
    assert code == 1, err
    offline = diagnose(load_run(path))
    first = offline.check("entropy_collapse").first_alert_step
    assert f"CRITICAL entropy_collapse: first alert at step {first}," in out
    assert out.splitlines()[-1].startswith("status: critical at step 800")
    code, out, _ = run_cli(capsys, "watch", path, "--once")
    assert code == 0 and "CRITICAL entropy_collapse" in out
    code, out, _ = run_cli(capsys, "watch", str(EXAMPLES / "healthy.csv"), "--once",
                           "--exit-on", "warning", "--select", "entropy_collapse")
    assert code == 0 and "no failure mode found" in out


def test_once_prints_its_alerts_in_the_order_they_were_raised(
        capsys: pytest.CaptureFixture[str]) -> None:
    """grad_explosion is alerted at step 651, numerical_failure (checked first) at 740: the
    alerts, and the last status, list them by first-alert step, not in the order of the
    checks."""
    path = str(EXAMPLES / "grad-explosion.csv")
    _, out, _ = run_cli(capsys, "watch", path, "--once")
    alerts = [line for line in out.splitlines() if not line.startswith("status:")]
    steps = [int(line.split("first alert at step ")[1].split(",")[0]) for line in alerts]
    assert [line.split()[1].rstrip(":") for line in alerts][:2] == ["grad_explosion",
                                                                    "numerical_failure"]
    assert steps == sorted(steps) and len(steps) >= 2
    status = out.splitlines()[-1]
    assert status.index("grad_explosion") < status.index("numerical_failure")
    _, out, _ = run_cli(capsys, "watch", path, "--once", "--format", "json")
    events = [json.loads(line) for line in out.splitlines()]
    steps = [e["first_alert_step"] for e in events if e["event"] == "alert"]
    assert steps == sorted(steps)
    last = [f["first_alert_step"] for f in events[-1]["findings"]]
    assert last == sorted(last) and len(last) >= 2


def test_json_lines_and_max_polls(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "watch", str(EXAMPLES / "kl-drift.csv"), "--format", "json",
                           "--max-polls", "2", "--interval", "0")
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    assert events[-1]["event"] == "status" and events[-1]["polls"] == 2
    alerts = [e for e in events if e["event"] == "alert"]
    kl = next(e for e in alerts if e["mode"] == "kl_drift")
    offline = diagnose(load_run(EXAMPLES / "kl-drift.csv")).check("kl_drift")
    assert kl["severity"] == "critical" and kl["first_alert_step"] == offline.first_alert_step


def test_ctrl_c_exits_cleanly_with_a_last_status(capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(time, "sleep", interrupted)
    code, out, err = run_cli(capsys, "watch", str(EXAMPLES / "grad-explosion.csv"))
    assert code == 0
    assert "CRITICAL grad_explosion" in out
    assert out.splitlines()[-1].startswith("status: critical at step")
    assert "watching" in err


def test_bad_options_are_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path
                                      ) -> None:
    path = str(EXAMPLES / "healthy.csv")
    assert run_cli(capsys, "watch", path, "--once", "--exit-on", "sometimes")[0] == 2
    assert run_cli(capsys, "watch", path, "--once", "--notify", "email")[0] == 2
    assert run_cli(capsys, "watch", path, "--once", "--format", "html")[0] == 2
    code, _, err = run_cli(capsys, "watch", str(tmp_path / "missing.csv"), "--once")
    assert code == 2 and "no such file" in err
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01binary\n" * 10)
    assert run_cli(capsys, "watch", str(tmp_path / "blob.bin"), "--once")[0] == 2


def test_notify_command_gets_the_alert_as_json(capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    sink = tmp_path / "alerts.jsonl"
    script = (f"import sys; open({str(sink)!r}, 'a').write(sys.stdin.read().strip() + "
              f"'\\n')")
    command = f"cmd:{shlex.quote(sys.executable)} -c {shlex.quote(script)}"
    code, out, err = run_cli(capsys, "watch", str(EXAMPLES / "entropy-collapse.csv"), "--once",
                             "--notify", command, "--notify", "cmd:false")
    assert code == 0
    sent = [json.loads(line) for line in sink.read_text().splitlines()]
    assert {a["mode"] for a in sent} == {"entropy_collapse", "advantage_collapse"}
    assert all(a["event"] == "alert" and a["first_alert_step"] for a in sent)
    assert "--notify cmd: false exited 1" in err


def test_notify_wandb_without_a_run_or_credentials_warns_once(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc
    code, out, err = run_cli(capsys, "watch", str(EXAMPLES / "entropy-collapse.csv"), "--once",
                             "--notify", "wandb")
    assert code == 0 and "CRITICAL entropy_collapse" in out
    assert err.count("--notify wandb") == 1 and "is not a W&B run" in err
    online = tmp_path / "wandb" / "run-20250101_000000-grpofix1"
    shutil.copytree(next((FIX / "wandb" / "wandb").glob("offline-run-*grpofix1")), online)
    code, out, err = run_cli(capsys, "watch", str(online), "--once", "--notify", "wandb")
    assert code == 0 and err.count("--notify wandb") == 1 and "no W&B credentials" in err


def test_notify_wandb_alerts_on_the_watched_run(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    calls: dict[str, list] = {"init": [], "alert": [], "finish": []}

    class FakeRun:
        def alert(self, **kw: object) -> None:
            calls["alert"].append(kw)

        def finish(self) -> None:
            calls["finish"].append(True)

    # The offline run is read with wandb's own protobuf classes: loaded before the fake
    # client takes the name (a test run alone had found no wandb.proto in the fake).
    import wandb.proto.wandb_internal_pb2  # noqa: F401

    fake = types.ModuleType("wandb")
    fake.Settings = lambda **kw: kw  # type: ignore[attr-defined]
    fake.AlertLevel = types.SimpleNamespace(ERROR="ERROR", WARN="WARN")  # type: ignore[attr-defined]

    def init(**kw: object) -> FakeRun:
        calls["init"].append(kw)
        return FakeRun()

    fake.init = init  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wandb", fake)
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    online = tmp_path / "run-20250101_000000-grpofix1"
    shutil.copytree(next((FIX / "wandb" / "wandb").glob("offline-run-*grpofix1")), online)
    watcher = Watcher(online)
    notifier = WandbNotifier(watcher)
    alerts = watcher.poll()
    assert notifier.problem() is None
    alert = alerts[0] if alerts else Alert("entropy_collapse", Status.CRITICAL, 5, 4, "s", 9)
    assert notifier(alert) is None and notifier(alert) is None
    notifier.close()
    (init_kw,) = calls["init"]
    assert init_kw["id"] == "grpofix1" and init_kw["project"] == "grpo-doctor-fixtures"
    assert init_kw["settings"]["mode"] == "shared" and not init_kw["settings"]["x_primary"]
    assert len(calls["alert"]) == 2 and alert.mode in calls["alert"][0]["title"]
    assert calls["finish"] == [True]


def test_the_live_panel_on_a_terminal(tmp_path: Path) -> None:
    import io

    path = tmp_path / "run.csv"
    shutil.copy(EXAMPLES / "entropy-collapse.csv", path)
    out = io.StringIO()
    code = run_watch(Watcher(path), interval=0, exit_on="critical", live=True, out=out,
                     err=io.StringIO(), sleep=lambda s: None)
    assert code == 1
    text = out.getvalue()
    assert "CRITICAL entropy_collapse" in text and "status: critical" in text


def test_escalation_alerts_again(tmp_path: Path) -> None:
    """A warning that becomes critical alerts twice; the second names the first."""
    path = tmp_path / "run.csv"
    lines = (EXAMPLES / "kl-drift.csv").read_text().splitlines(True)
    path.write_text("".join(lines[:420]))
    watcher = Watcher(path, )
    first = {a.mode: a for a in watcher.poll()}
    assert first["kl_drift"].severity is Status.WARNING
    with path.open("a") as fh:
        fh.write("".join(lines[420:]))
    later = {a.mode: a for a in watcher.poll()}
    kl = later["kl_drift"]
    assert kl.severity is Status.CRITICAL and kl.previous is Status.WARNING and kl.escalated
    assert "escalated from warning" in kl.line()
    assert watcher.diagnosis().check("kl_drift").first_alert_step == kl.first_alert_step


# --- what a live watch shows: stable, and it says when a finding clears ------------------------


def test_an_escalation_keeps_the_first_alert_step(tmp_path: Path) -> None:
    path = tmp_path / "run.csv"
    lines = (EXAMPLES / "kl-drift.csv").read_text().splitlines(True)
    path.write_text("".join(lines[:420]))
    watcher = Watcher(path)
    first = {a.mode: a for a in watcher.poll()}["kl_drift"]
    with path.open("a") as fh:
        fh.write("".join(lines[420:]))
    kl = {a.mode: a for a in watcher.poll()}["kl_drift"]
    assert kl.escalated and kl.first_alert_step == first.first_alert_step
    assert kl.onset_step is not None and kl.onset_step <= kl.first_alert_step


def test_what_is_shown_live_changes_only_when_the_finding_does(tmp_path: Path) -> None:
    """Polled every few steps: a finding's onset and first alert stay as they were shown until
    its severity changes, and the first alert never moves back."""
    path = tmp_path / "run.csv"
    lines = (EXAMPLES / "entropy-collapse.csv").read_text().splitlines(True)
    path.write_text(lines[0])
    watcher = Watcher(path)
    shown: dict[str, tuple[str, int | None, int | None]] = {}
    changes = 0
    for end in range(41, len(lines) + 40, 40):
        with path.open("a") as fh:
            fh.write("".join(lines[end - 40:end]))
        watcher.poll()
        for c in watcher.checks:
            if not c.fired:
                shown.pop(c.mode, None)
                continue
            now = (c.status.value, c.onset_step, c.first_alert_step)
            before = shown.get(c.mode)
            if before is not None and before[0] == now[0]:
                assert now == before, c.mode
            elif before is not None:
                changes += 1
                assert now[2] == before[2], c.mode  # the mode's first alert stands
            shown[c.mode] = now
    assert shown, "the scenario should raise findings"


def _rises_falls_recovers(n: int = 900) -> list[str]:
    t = np.arange(n)
    reward = np.interp(t, [0, 300, 400, 550, 900], [0.2, 0.8, 0.35, 0.9, 0.92])
    reward = reward + ar1(1, n, 0.01)
    return ["step,train/reward\n"] + [f"{i + 1},{reward[i]:.5f}\n" for i in range(n)]


def test_a_finding_that_clears_says_so(capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    """Reward rises, gives half its gain back (reward_overfit), then recovers: a cleared line
    (a ``cleared`` event in JSON), and the status no longer lists the finding."""
    import io

    lines = _rises_falls_recovers()
    for output in ("terminal", "json"):
        path = tmp_path / f"run-{output}.csv"
        path.write_text("".join(lines[:101]))
        chunks = iter(range(101, len(lines) + 50, 50))

        def grow(_seconds: float, path: Path = path, chunks=chunks) -> None:
            end = next(chunks)
            with path.open("a") as fh:
                fh.write("".join(lines[end - 50:end]))

        out = io.StringIO()
        code = run_watch(Watcher(path), interval=0, output=output, max_polls=18, out=out,
                         err=io.StringIO(), sleep=grow)
        assert code == 0
        text = out.getvalue()
        if output == "json":
            events = [json.loads(line) for line in text.splitlines()]
            raised = [e for e in events if e["event"] == "alert" and e["mode"] == "reward_overfit"]
            cleared = [e for e in events if e["event"] == "cleared"]
            assert raised and cleared and cleared[0]["mode"] == "reward_overfit"
            assert cleared[0]["previous"] == raised[0]["severity"]
            assert cleared[0]["first_alert_step"] == raised[0]["first_alert_step"]
            assert cleared[0]["step"] > raised[0]["step"]
            # Held until clear for 20 logged points (the default clear-after).
            assert cleared[0]["clear_points"] >= 20
            assert cleared[0]["last_seen_step"] + 20 <= cleared[0]["step"]
            assert events[-1]["event"] == "status" and not events[-1]["findings"]
        else:
            assert "WARNING reward_overfit" in text or "CRITICAL reward_overfit" in text
            line = next(x for x in text.splitlines() if x.startswith("CLEARED"))
            assert line.startswith("CLEARED reward_overfit (was ")
            assert text.splitlines()[-1].endswith("no failure mode found")


def test_a_folder_of_runs_is_watched_whole(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    """The README's job script: ``watch runs/ --exit-on critical`` on a folder of runs."""
    runs = tmp_path / "runs"
    (runs / "a").mkdir(parents=True)
    shutil.copy(EXAMPLES / "healthy.csv", runs / "a" / "metrics.csv")
    shutil.copy(EXAMPLES / "kl-drift.csv", runs / "b.csv")
    shutil.copytree(FIX / "corpus" / "01_healthy_s1", runs / "tb1")
    (runs / "notes.txt").write_text("not a log\n")
    code, out, err = run_cli(capsys, "watch", str(runs), "--once")
    assert code == 0 and err == ""
    status = [line for line in out.splitlines() if line.startswith("status: ")]
    assert sorted(line.split(":")[1].strip() for line in status) == ["a", "b", "tb1"]
    assert "status: b: critical at step 800" in out
    assert "b: CRITICAL kl_drift: first alert at step" in out
    code, out, _ = run_cli(capsys, "watch", str(runs), "--once", "--exit-on", "critical")
    assert code == 1
    code, out, _ = run_cli(capsys, "watch", str(runs), "--once", "-f", "json")
    events = [json.loads(line) for line in out.splitlines()]
    assert {e["run"] for e in events if e["event"] == "status"} == {"a", "b", "tb1"}
    code, out, _ = run_cli(capsys, "watch", str(runs), "--once", "--run", "b")
    assert out.splitlines()[-1].startswith("status: b: critical at step 800")  # only b
    assert "status: a" not in out and "tb1" not in out


def test_a_run_that_appears_later_is_picked_up_once(tmp_path: Path) -> None:
    """Training starts after the watch: an empty folder, then a run folder whose event file is
    created empty and written afterwards. One watcher for it, its alerts named."""
    import io

    from grpo_doctor.watch import WatchAll

    runs = tmp_path / "runs"
    runs.mkdir()
    source = next((FIX / "corpus" / "08_lr_too_high").glob("events.out.tfevents.*"))
    steps = iter([
        lambda: (runs / "Jan01_host").mkdir(),
        lambda: (runs / "Jan01_host" / source.name).write_bytes(b""),
        lambda: shutil.copy(source, runs / "Jan01_host" / source.name),
    ])
    watcher = WatchAll(runs)
    out, err = io.StringIO(), io.StringIO()
    code = run_watch(watcher, interval=0, exit_on="critical", max_polls=6, out=out, err=err,
                     sleep=lambda _s: next(steps, lambda: None)())
    assert code == 1
    assert "waiting for data in" in err.getvalue()
    assert len(watcher.members()) == 1 and watcher.members()[0].path == runs / "Jan01_host"
    alerts = [line for line in out.getvalue().splitlines() if " CRITICAL " in f" {line}"]
    assert alerts and len({line.split(":")[1] for line in alerts}) == len(alerts)


def test_a_log_holding_several_runs_is_watched_run_by_run(tmp_path: Path) -> None:
    from grpo_doctor.watch import WatchAll

    rows = ["run_id,step,train/reward,train/entropy"]
    for run, slope in (("steady", 0.0), ("collapsing", 1.0)):
        for i in range(1, 301):
            ent = 1.0 - slope * 0.99 * min(1.0, max(0.0, (i - 100) / 100))
            rows.append(f"{run},{i},{0.5 + 0.001 * (i % 7):.4f},{ent + 0.001 * (i % 5):.4f}")
    path = tmp_path / "two.csv"
    path.write_text("\n".join(rows) + "\n")
    watcher = WatchAll(path)
    alerts = watcher.poll(final=True)
    assert sorted(w.run.name for w in watcher.members()) == ["collapsing", "steady"]
    assert {a.run for a in alerts} == {"collapsing"}


def _watch_grown_from(tmp_path: Path, lines: list[str], first_metrics: int) -> Watcher:
    """Grow a log line by line, polling at each line, as a trainer's start-up then metrics."""
    log = tmp_path / "live.log"
    log.write_text("")
    watcher = Watcher(log)
    with log.open("a", encoding="utf-8") as fh:
        for i, line in enumerate(lines):
            fh.write(line)
            fh.flush()
            watcher.poll()
            if i < first_metrics:
                assert watcher.source is None  # still waiting: nothing is a metric yet
    watcher.poll(final=True)
    return watcher


def test_a_log_that_starts_with_start_up_lines_waits_for_its_metrics(tmp_path: Path) -> None:
    """verl and TRL print hundreds of lines (Ray, config, model loading) before the first
    metrics: a watch started with the job must wait, not stop at its first poll."""
    start_up = [f"(TaskRunner pid=41) loading shard {i} of the model, config key_{i}=value\n"
                for i in range(40)]
    metrics = [f"step:{s} - critic/score/mean:{0.1 + 0.01 * s:.3f} - actor/entropy_loss:"
               f"{1.2 - 0.001 * s:.4f} - actor/grad_norm:0.5\n" for s in range(1, 31)]
    watcher = _watch_grown_from(tmp_path, start_up + metrics, len(start_up))
    assert watcher.run is not None and watcher.run.n_steps == 30


def test_a_text_file_that_never_becomes_a_log_is_an_error_once_complete(capsys, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("nothing here is a metric\n" * 20)
    code, _, err = run_cli(capsys, "watch", str(notes), "--once")
    assert code == 2 and "not a training log" in err


REAL_VERL = REAL_RUNS / "verl-console" / "Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538.log"


@pytest.mark.skipif(not REAL_VERL.is_file(), reason="shared real runs not present")
def test_a_real_verl_log_watched_from_its_first_line(tmp_path: Path) -> None:
    text = REAL_VERL.read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if "step:" in line and " - " in line)
    assert first > 100  # the start-up this test is about
    step = 25  # poll every 25 lines: a trainer writes many lines between two polls
    log = tmp_path / "live.log"
    log.write_text("")
    watcher = Watcher(log)
    for i in range(0, len(lines), step):
        with log.open("a", encoding="utf-8") as fh:
            fh.write("".join(lines[i:i + step]))
        watcher.poll()
    watcher.poll(final=True)
    assert watcher.run is not None
    assert watcher.run.n_steps == load_run(REAL_VERL).n_steps


def _trl_dict(i: int) -> str:
    """The i-th dict a failing GRPO run prints: the reward falls and its groups go flat."""
    return (f"{{'loss': 0.0, 'reward': {max(0.0, 0.5 - 0.02 * i):.3f}, 'reward_std': 0.0, "
            f"'frac_reward_zero_std': 1.0, 'kl': {0.01 * i:.3f}, 'grad_norm': 0.0, "
            f"'epoch': {i / 100:.2f}}}")


def test_alerts_on_a_log_with_no_step_say_log_line(capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path) -> None:
    """A printed-dict log with no step key and no progress bar is numbered by its lines while
    it runs; the run's end may later map them to trainer steps, so no number shown (alert,
    finding summary, status) may call a log line a step."""
    log = tmp_path / "train.log"
    log.write_text("".join(_trl_dict(i) + "\n" for i in range(1, 41)))
    watcher = Watcher(log)
    alerts = watcher.poll(final=True)
    assert alerts and all(a.step_unit == "log line" for a in alerts)
    assert all(" at log line " in a.line() and " at step " not in a.line() for a in alerts)
    assert all(a.to_dict()["step_unit"] == "log line" for a in alerts)
    assert any("log line" in a.summary for a in alerts)  # "from log line 27", not "from step"
    _, out, _ = run_cli(capsys, "watch", str(log), "--once")
    assert "step" not in out.replace("_std", ""), out
    assert out.splitlines()[-1].startswith("status: critical at log line 40 (40 log lines, ")
    _, out, _ = run_cli(capsys, "watch", str(log), "--once", "--format", "json")
    assert json.loads(out.splitlines()[-1])["step_unit"] == "log line"
    csv = tmp_path / "run.csv"
    csv.write_text("step,reward,frac_reward_zero_std\n" + "".join(
        f"{s},{0.5 - 0.01 * s:.3f},1.0\n" for s in range(1, 41)))
    assert all(a.step_unit == "step" for a in Watcher(csv).poll(final=True))


def _buffered_trl_log(total: int = 200, every: int = 5, batch: int = 7) -> bytes:
    """A TRL console log captured to a file: tqdm's bar (stderr, unbuffered) at every step,
    cleared and redrawn at each step the Trainer prints a dict; the dicts (stdout, buffered)
    reach the file ``batch`` at a time, long after their steps; the closing summary at the
    end."""
    out = ["***** Running training *****\n", "  Total optimization steps = 200\n"]
    pending: list[str] = []
    for step in range(1, total + 1):
        bar = f"\r{100 * step // total:3d}%|{'#' * (10 * step // total):10}| {step}/{total} " \
              f"[00:{step:02d}<00:00,  4.60s/it]"
        out.append(bar)
        if step % every:
            continue
        out.append("\r" + " " * 48 + "\r")  # tqdm.write clears the bar...
        pending.append(_trl_dict(step // every) + "\n")
        if len(pending) > batch:  # ...the print fills stdout's buffer: the first batch lands
            out += pending[:batch]
            pending = pending[batch:]
        out.append(bar)  # ...and redraws it
    summary = "{'train_runtime': 920.0, 'train_samples_per_second': 1.7, " \
              "'train_steps_per_second': 0.217, 'train_loss': 0.0, 'epoch': 0.4}\n"
    return "".join([*out, "\n", *pending, summary]).encode()


def test_a_buffered_trl_log_is_watched_in_trainer_steps(capsys: pytest.CaptureFixture[str],
                                                        tmp_path: Path) -> None:
    """Each dict reaches the file 35 steps after it was logged; read live, it still gets the
    trainer step the finished log gives it (from the bar's clears), so alerts, onsets, their
    summaries and the status are in trainer steps, the ones ``diagnose`` gives."""
    data = _buffered_trl_log()
    path = tmp_path / "train.log"
    path.write_bytes(b"")
    watcher = Watcher(path)
    cuts = sorted(random.Random(7).sample(range(1, len(data)), 60))
    _grow(path, data, cuts, watcher)
    finished = load_run(path)
    assert list(finished.frame.index) == list(range(5, 201, 5))
    _same_run(watcher.run, finished)
    offline = diagnose(finished)
    assert offline.findings
    for check in offline.findings:
        first = next(a for a in watcher.alerts if a.mode == check.mode)
        assert first.step_unit == "step" and first.step % 5 == 0
        assert first.first_alert_step == check.first_alert_step, (check.mode, first)
    # Part of the log, as a watch started late finds it: the same steps, named steps.
    part = tmp_path / "part.log"
    part.write_bytes(data[:data.index(b"\n", len(data) * 2 // 3) + 1])
    _, out, _ = run_cli(capsys, "watch", str(part), "--once")
    assert "log line" not in out
    last = load_run(part).last_step
    assert last % 5 == 0 and last > 100
    assert out.splitlines()[-1].startswith(f"status: critical at step {last} ")


def _old(path: Path) -> None:
    """A log its writer last touched a minute ago (quiet for longer than a poll interval)."""
    then = time.time() - 60
    os.utime(path, (then, then))


def test_a_last_line_without_newline_is_read_when_the_watch_stops(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    """A finished log often ends without a newline: polls leave that line (it may be still
    being written), the read as the watch stops takes it once the log has been quiet for a
    poll interval, so the last status counts it as ``diagnose`` does."""
    path = tmp_path / "run.csv"
    path.write_text("step,reward\n" + "".join(f"{s},{0.5 + s / 1000}\n" for s in range(1, 40))
                    + "40,0.54")
    _old(path)
    code, out, _ = run_cli(capsys, "watch", str(path), "--max-polls", "2", "--interval", "0")
    assert code == 0
    assert " at step 40 (40 steps, 2 polls)" in out.splitlines()[-1]

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(time, "sleep", interrupted)  # Ctrl-C while waiting for the next poll
    _, out, _ = run_cli(capsys, "watch", str(path))
    assert " at step 40 (40 steps, 1 poll)" in out.splitlines()[-1]
    # Written a moment ago: the writer may be in the middle of that line, left unread.
    soon = time.time() + 60
    os.utime(path, (soon, soon))
    _, out, _ = run_cli(capsys, "watch", str(path))
    assert " at step 39 (39 steps, 1 poll)" in out.splitlines()[-1]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_alerts_wrap_to_a_terminal_with_a_hanging_indent_and_stay_one_line_in_a_pipe(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    path = EXAMPLES / "grad-explosion.csv"
    tty, pipe = _Terminal(), io.StringIO()
    assert run_watch(Watcher(path), once=True, out=tty, err=io.StringIO()) == 0
    assert run_watch(Watcher(path), once=True, out=pipe, err=io.StringIO()) == 0
    piped = pipe.getvalue().splitlines()
    shown = tty.getvalue().splitlines()
    assert max(len(line) for line in piped) > 80  # one line per alert, for grep
    assert max(len(line) for line in shown) <= 80
    heads = [line for line in shown if not line.startswith("    ")]
    assert len(heads) == len(piped)  # each alert or status starts a line, the rest hang
    assert " ".join(line.strip() for line in shown) == " ".join(piped)


# --- rewrites caught by the poll ------------------------------------------------------------------


def _collapse_text(kind: str, flat: bool = False) -> str:
    """The ``collapse()`` run as a CSV or a trainer_state.json, every value 6 characters wide:
    ``flat`` (entropy 0.9900 throughout, the reward rising 0.50 -> 0.90: healthy) has the very
    same size."""
    rows = collapse()
    ent = ["0.9900" if flat else f"{r['train/entropy']:.4f}" for r in rows]
    rew = [f"{0.5 + 0.4 * i / len(rows):.4f}" if flat else f"{r['train/reward']:.4f}"
           for i, r in enumerate(rows)]
    if kind == "csv":
        return "step,train/entropy,train/reward\n" + "".join(
            f"{r['step']},{e},{w}\n" for r, e, w in zip(rows, ent, rew))
    entries = ",".join(f'{{"step": {r["step"]}, "entropy": {e}, "reward": {w}}}'
                       for r, e, w in zip(rows, ent, rew))
    return f'{{"global_step": {len(rows)}, "log_history": [{entries}]}}\n'


@pytest.mark.parametrize("kind", ["csv", "trainer_state"])
def test_a_same_size_rewrite_with_its_mtime_put_back_is_read_again(tmp_path: Path, kind: str
                                                                   ) -> None:
    """A log rewritten in place to the same size, its modification time put back (``cp -p``,
    ``touch -r``), was never read again: size and mtime matched. Its change time differs."""
    path = tmp_path / ("run.csv" if kind == "csv" else "trainer_state.json")
    before, after = _collapse_text(kind), _collapse_text(kind, flat=True)
    assert len(before) == len(after) and before != after
    path.write_text(before)
    watcher = Watcher(path)
    watcher.poll()
    assert watcher.status == "critical"
    st = path.stat()
    time.sleep(0.02)  # past the file system's clock tick
    with path.open("r+") as fh:  # in place: same inode, same size
        fh.write(after)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    watcher.poll()
    assert watcher.status == "healthy"
    assert list(watcher.run.steps) == list(range(1, 161))


@pytest.mark.parametrize("moment", [bytes(range(256)) * 40, b"step,train/entr"])
def test_a_moment_of_garbage_during_a_rewrite_is_read_again_at_the_next_poll(
        tmp_path: Path, moment: bytes) -> None:
    """A poll that caught the log half rewritten (binary garbage, a cut header) stopped the
    watch with exit 2. It keeps the last Run read and reads the log at the next poll; a log
    still unreadable after MAX_UNREADABLE_POLLS polls in a row is the error."""
    from grpo_doctor.errors import GrpoDoctorError
    from grpo_doctor.watch import MAX_UNREADABLE_POLLS

    path = tmp_path / "run.csv"
    path.write_text(_collapse_text("csv"))
    watcher = Watcher(path)
    watcher.poll()
    read = watcher.run.n_steps
    for _ in range(MAX_UNREADABLE_POLLS - 1):
        path.write_bytes(moment)
        assert watcher.poll() == []
        assert watcher.run is not None and watcher.run.n_steps == read  # the last read kept
        assert watcher.status == "critical"
    if b"\x00" in moment:  # an error read past once, said once; a cut header is no error
        assert len(watcher.warnings) == 1
        assert "trying again at the next poll" in watcher.warnings[0]
    else:
        assert watcher.warnings == []
    path.write_text(_collapse_text("csv", flat=True))  # the rewrite done
    assert [a.mode for a in watcher.poll() if a.cleared] == ["entropy_collapse"]
    assert watcher.status == "healthy" and watcher.restarts == 1 and watcher.unreadable == 0
    for _ in range(MAX_UNREADABLE_POLLS - 1):  # garbage for good
        path.write_bytes(bytes(range(256)) * 40)
        watcher.poll()
    with pytest.raises(GrpoDoctorError, match=f"{MAX_UNREADABLE_POLLS} polls in a row"):
        watcher.poll()


def test_the_watch_says_a_moment_of_garbage_and_goes_on(capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path) -> None:
    """Through the command line: a warning on stderr, no exit 2, the watch goes on."""
    path = tmp_path / "run.csv"
    path.write_text(_collapse_text("csv"))
    polls = iter([lambda: path.write_bytes(bytes(range(256)) * 40),
                  lambda: path.write_text(_collapse_text("csv", flat=True))])
    watcher = Watcher(path)
    out, err = io.StringIO(), io.StringIO()
    code = run_watch(watcher, interval=0, max_polls=3, out=out, err=err, live=False,
                     sleep=lambda _: next(polls)())
    assert code == 0, err.getvalue()
    said = err.getvalue()
    assert f"warning: cannot read {path} now" in said and f"{path} is readable again" in said
    assert out.getvalue().splitlines()[-1].startswith("status: healthy")


REAL_SCU = REAL_RUNS / "trl-console" / "SCU_TSC_docker_run.log"


@pytest.mark.skipif(not REAL_SCU.is_file(), reason="shared real runs not present")
def test_live_alerts_say_what_to_do_first_and_revise_it_when_the_cause_is_clearer() -> None:
    """The real SCU run fed to the monitor a logged step at a time (trial 42): its first alert
    (equal-reward groups, three logs in) carries the diagnosis's first action and says it, and
    once the log shows the reward function pinned at 0.5 the advice is revised to check it
    (it had said "dynamic sampling" for 69 logs, ADVICE.md's wrong first step), at most a few
    times, each with no new finding."""
    from grpo_doctor.monitor import Monitor

    final = load_run(REAL_SCU)
    monitor = Monitor()
    got: list[Alert] = []
    for step in final.steps:
        got += monitor.evaluate(final.truncated(int(step)))
    first = next(a for a in got if a.event == "alert")
    truncated = final.truncated(int(first.step))
    assert first.first_action == diagnose(truncated).root_cause.first_action
    assert ". Do first: " in first.line()
    revised = [a for a in got if a.revised]
    assert revised and len(revised) <= 3
    assert revised[0].first_action.startswith("check the reward function")
    assert revised[0].line().startswith("DO FIRST (revised at step ")
    assert revised[0].to_dict()["event"] == "advice"
    assert diagnose(final).root_cause.first_action.startswith("check the reward function")


def test_a_held_summary_says_when_it_was_written_and_the_panel_what_to_do(tmp_path: Path
                                                                          ) -> None:
    """A finding held as shown keeps the numbers of the poll that raised it: once the log has
    moved on, the panel says "(as of step N)" beside them (trial 42: "always 0 over 20
    steps" still shown at step 60), and shows what to do first under the findings."""
    from rich.console import Console

    from grpo_doctor.reporters.live import live_panel

    path = tmp_path / "run.csv"
    lines = (EXAMPLES / "entropy-collapse.csv").read_text().splitlines(True)
    path.write_text("".join(lines[:-40]))
    watcher = Watcher(path)
    raised = [a for a in watcher.poll() if a.event == "alert"]
    assert raised
    with path.open("a") as fh:
        fh.write("".join(lines[-40:]))
    watcher.poll()
    mode = raised[0].mode
    assert watcher.shown_at[mode] == raised[0].step < watcher.run.last_step
    console = Console(record=True, width=400)
    console.print(live_panel(watcher, 1.0))
    text = console.export_text()
    assert f"(as of step {raised[0].step:,})" in text
    assert "do first: " in text and watcher.first_action and watcher.first_action[:30] in text


def test_an_onset_moved_to_the_alert_is_said_in_the_sentence_too() -> None:
    """The callback printed "onset 3 ... from step 6": an alert whose first-alert step comes
    before the rule's onset moves the onset there and says it was raised from there; an
    earlier episode that raised it keeps the episode the sentence describes."""
    from grpo_doctor.findings import Check, Incident
    from grpo_doctor.monitor import _onset_by

    late = Check("kl_drift", Status.WARNING, "KL rose from 0.1 to 0.9 from step 6", 6, 3)
    moved = _onset_by(late)
    assert moved.onset_step == 3 and moved.summary.endswith("; raised from step 3")
    episode = Incident("kl", 3, 4, 1.2, 1.0, 5, "an episode")
    kept = _onset_by(Check("kl_drift", Status.WARNING, late.summary, 6, 3,
                           incidents=(episode,)))
    assert kept.onset_step == 6 and kept.summary == late.summary


REAL_TWO_RUNS = REAL_RUNS / "trl-console" / "RLDecisionAgent_train_grpo.log"


@pytest.mark.skipif(not REAL_TWO_RUNS.is_file(), reason="shared real runs not present")
def test_a_relaunch_into_the_same_log_is_watched_as_another_run(tmp_path: Path) -> None:
    """A console log that a second launch appends to (the real RLDecisionAgent log: NaN from
    the first update, then a relaunch): the watch follows each run as diagnose names them,
    and the second run never "clears" the first one's NaN (trial 42)."""
    from grpo_doctor.watch import WatchAll

    lines = REAL_TWO_RUNS.read_text(encoding="utf-8", errors="replace").splitlines(True)
    log = tmp_path / "train.log"
    log.write_text("")
    watch = WatchAll(log)
    got: list[Alert] = []
    for i in range(0, len(lines), 10):
        with log.open("a", encoding="utf-8") as fh:
            fh.write("".join(lines[i:i + 10]))
        got += watch.poll()
    got += watch.poll(final=True)
    names = {w.run.name for w in watch.members() if w.run is not None}
    assert {"train#1", "train#2"} <= names
    first = next(w for w in watch.members() if w.run is not None and w.run.name == "train#1")
    assert first.status == "critical"
    assert not any(a.cleared and a.mode == "numerical_failure" for a in got)


@pytest.mark.skipif(not REAL_SCU.is_file(), reason="shared real runs not present")
def test_the_advice_pending_its_hold_is_the_last_word_when_the_watch_ends() -> None:
    """A watch (or training) that ends while a changed root cause waits out its hold prints it
    then: the last advice printed is the diagnosis' on the log read, never a first action the
    final status contradicts (sclr_l3, trial 42)."""
    from grpo_doctor.monitor import Monitor

    final = load_run(REAL_SCU)
    for end in (30, 35, 40):
        monitor = Monitor()
        got: list[Alert] = []
        for step in final.steps[final.steps <= end]:
            got += monitor.evaluate(final.truncated(int(step)))
        if any(a.revised for a in got):
            continue
        settled = monitor.settle()
        if settled:
            assert settled[0].revised and settled[0].first_action == monitor.first_action
            assert monitor.settle() == []  # said once
            return
    pytest.fail("no advice was pending at steps 30-40")


def test_a_log_deleted_while_watched_is_said_once_and_its_return_too(tmp_path: Path) -> None:
    """The watch had gone on silently, and ended "healthy", on a log that no longer existed
    (helper-77)."""
    path = tmp_path / "run.csv"
    rows = ["step,reward,kl"] + [f"{s},{0.01 * s},{0.001 * s}" for s in range(1, 31)]
    path.write_text("\n".join(rows) + "\n")
    watcher = Watcher(path)
    watcher.poll()
    assert watcher.run is not None and not watcher.warnings
    path.unlink()
    watcher.poll()
    watcher.poll()
    assert watcher.warnings == [f"{path} is gone (deleted or moved): keeping what was read, "
                                "and waiting for it to come back"]
    assert watcher.run is not None and watcher.run.n_steps == 30
    watcher.warnings.clear()
    path.write_text("\n".join(rows[:21]) + "\n")
    watcher.poll()
    assert watcher.warnings[0] == f"{path} is back: reading it again"


def test_a_log_replaced_by_another_or_by_a_folder_is_said_and_a_rewrite_is_not(
        tmp_path: Path) -> None:
    """``mv other.log run.log`` mid-watch had mixed two logs in one status, and a folder made
    at the log's path went unsaid for 60 polls (helper-84). A log rewritten whole with the
    same first steps (an export saved each time) is the same log: nothing said."""
    import os

    path = tmp_path / "run.csv"
    rows = ["step,reward,entropy"] + [f"{s},{0.01 * s},{0.6 - 0.005 * s}" for s in range(1, 31)]
    path.write_text("\n".join(rows) + "\n")
    watcher = Watcher(path)
    watcher.poll()
    first = watcher.monitor
    rewrite = tmp_path / "tmp.csv"
    rewrite.write_text("\n".join(rows) + "\n")
    os.replace(rewrite, path)  # an atomic save of the same run
    watcher.poll()
    assert not watcher.warnings and watcher.monitor is first
    rewrite.write_text("\n".join(rows[:21]) + "\n")
    os.replace(rewrite, path)  # the same run, cut back: said (helper-88)
    watcher.poll()
    assert watcher.warnings == [f"{path} now ends at step 20, before step 30 read: read "
                                "again from its start"]
    assert watcher.monitor is first
    watcher.warnings.clear()
    other = tmp_path / "other.csv"
    other.write_text("step,reward,entropy\n" + "".join(
        f"{s},{0.5 - 0.01 * s},{0.2}\n" for s in range(1, 41)))
    os.replace(other, path)
    watcher.poll()
    assert watcher.warnings == [f"{path} now holds another log (its first steps differ from "
                                "those read): reading it from its start, its alerts anew"]
    assert watcher.monitor is not first and watcher.run is not None
    assert watcher.run.n_steps == 40
    watcher.warnings.clear()
    path.unlink()
    path.mkdir()
    watcher.poll()
    watcher.poll()
    assert watcher.warnings == [f"{path} is now a folder, not the file read: keeping what was "
                                "read, and waiting for it to come back"]
    assert watcher.run is not None and watcher.run.n_steps == 40
    # Rotated (copytruncate): the file now holds the steps after those read: the same run.
    second = watcher.monitor
    watcher.warnings.clear()
    rotated = tmp_path / "rotated.csv"
    rotated.write_text("step,reward,entropy\n" + "".join(
        f"{s},{0.5 - 0.01 * s},{0.2}\n" for s in range(41, 61)))
    path.rmdir()
    os.replace(rotated, path)
    watcher.poll()
    watcher.poll()
    assert watcher.monitor is second
    assert not any("another log" in w for w in watcher.warnings), watcher.warnings


def test_a_watch_warning_is_a_json_event_too(tmp_path: Path) -> None:
    """A JSON consumer had seen findings cleared "its log was replaced by another" with no
    event saying why (helper-88): each warning is an event of its own."""
    import io
    import json
    import os

    from grpo_doctor.watch import run_watch

    path = tmp_path / "run.csv"
    path.write_text("step,reward,entropy\n" + "".join(
        f"{s},{0.01 * s},{0.6 - 0.005 * s}\n" for s in range(1, 31)))
    other = tmp_path / "other.csv"
    other.write_text("step,reward,entropy\n" + "".join(
        f"{s},{0.5 - 0.01 * s},0.2\n" for s in range(1, 41)))
    steps = iter([lambda: os.replace(other, path)])
    out, err = io.StringIO(), io.StringIO()
    run_watch(Watcher(path), interval=0, output="json", max_polls=3, out=out, err=err,
              sleep=lambda _s: next(steps, lambda: None)())
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    warned = [e for e in events if e["event"] == "warning"]
    assert len(warned) == 1 and "now holds another log" in warned[0]["message"], events
    assert "now holds another log" in err.getvalue()


def test_an_alert_whose_first_alert_came_before_its_onset_says_it_was_an_earlier_episode():
    """watch --once had said "first alert at step 65, onset 170" where diagnose says the
    alert at 65 was an earlier episode's (helper-83)."""
    alert = Alert(mode="no_learning_signal", severity=Status.CRITICAL, first_alert_step=65,
                  onset_step=170, step=200, summary="no learning signal since step 170")
    assert "first alert at step 65 (an earlier episode), onset 170" in alert.line()
    same = Alert(mode="kl_drift", severity=Status.WARNING, first_alert_step=71,
                 onset_step=71, step=200, summary="KL incident")
    assert "first alert at step 71, onset 71" in same.line()


def test_a_folder_watch_never_reads_its_own_json_events(tmp_path: Path, capsys) -> None:
    """Trial 72: `watch FOLDER --format json > FOLDER/watch.jsonl` read its own output file as
    a run (and every earlier watch's); diagnose named it refuses it in one line."""
    from tests.helpers import run_cli

    rows = ["{" + f"'loss': 0.1, 'reward': {0.2 + s / 100:.3f}, 'epoch': {s / 40:.3f}" + "}"
            for s in range(1, 41)]
    (tmp_path / "console.log").write_text("\n".join(rows) + "\n")
    (tmp_path / "watch.jsonl").write_text(
        '{"event": "status", "status": "healthy", "run": "x", "step": 40, "n_steps": 40, '
        '"polls": 3, "findings": []}\n'
        '{"event": "alert", "mode": "kl_drift", "severity": "warning", "step": 12}\n')
    code, out, err = run_cli(capsys, "watch", str(tmp_path), "--once", "--format", "json")
    sources = {json.loads(line).get("source") for line in out.splitlines() if line.strip()}
    assert sources == {str(tmp_path / "console.log")}, (sources, err)
    code, out, err = run_cli(capsys, "diagnose", str(tmp_path / "watch.jsonl"))
    assert code == 2 and "grpo-doctor's own events" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("head", [b"\xef\xbb\xbf", b"\n\n", b"  \r\n"])
def test_own_json_events_after_a_byte_order_mark_or_blank_lines_are_still_its_own(
        tmp_path: Path, head: bytes) -> None:
    """h99: a BOM or a blank first line made the events file a JSONL run to audit ("no
    metric grpo-doctor knows (columns: n_steps, polls)")."""
    from grpo_doctor.importers._common import own_events

    events = tmp_path / "watch.jsonl"
    events.write_bytes(head + b'{"event": "eased", "mode": "kl_drift", "severity": "warning"}\n')
    assert own_events(events)
    events.write_bytes(head + b'{"step": 1, "event": "x", "reward": 0.1}\n')
    assert not own_events(events)
