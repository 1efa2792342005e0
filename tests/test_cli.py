"""The command line, driven as a user drives it: exit codes, outputs, one-line errors."""

import json
import re
import subprocess
import sys

import pytest

from tests.helpers import run_cli

# What a consumer of schema_version 1 reads: version 2 only adds keys, so these stay.
V1_KEYS = {"schema_version", "run", "metrics", "checks", "status"}
V1_CHECK_KEYS = {"mode", "status", "onset_step", "first_alert_step", "summary", "evidence",
                 "remedies", "reason"}
V1_STATUSES = {"ok", "warning", "critical", "skipped"}


def test_a_v1_consumer_reads_version_2_unchanged(capsys):
    """Every key and value type a version-1 reader relied on is where it was."""
    for example in ("entropy-collapse", "healthy", "kl-drift"):
        _, out, _ = run_cli(capsys, "diagnose", "--example", example, "-f", "json")
        d = json.loads(out)
        assert set(d) >= V1_KEYS and d["schema_version"] >= 1
        assert d["status"] in {"healthy", "warning", "critical", "inconclusive"}
        assert isinstance(d["metrics"], dict) and isinstance(d["checks"], list)
        for c in d["checks"]:
            assert set(c) >= V1_CHECK_KEYS and c["status"] in V1_STATUSES
            assert isinstance(c["remedies"], list) and isinstance(c["evidence"], dict)
            assert all(isinstance(r, str) for r in c["remedies"])


def test_diagnose_example_json_contract(capsys):
    code, out, err = run_cli(capsys, "diagnose", "--example", "entropy-collapse", "--format",
                             "json")
    assert code == 1
    d = json.loads(out)
    assert set(d) == V1_KEYS | {"status_reason", "notes", "root_cause", "plan", "hints",
                                "config", "setup", "signs"}
    assert d["schema_version"] == 2 and d["status"] == "critical"
    assert d["config"] == {"file": None, "ignored": [], "overrides": {}}
    assert set(d["run"]) == {"name", "source", "format", "first_step", "last_step", "n_steps"}
    for c in d["checks"]:
        assert set(c) == V1_CHECK_KEYS | {"incidents", "episode_alert_step"}
    assert set(d["root_cause"]) == {"mode", "step", "summary", "first_action", "knob",
                                    "setup_problem", "cause"}
    assert d["root_cause"]["mode"] == "entropy_collapse" and d["status_reason"] is None
    assert d["root_cause"]["cause"] is None  # the finding is the cause
    assert all(set(p) == {"action", "for", "treats", "knob", "rollback_step"}
               for p in d["plan"])
    assert d["plan"][0]["treats"] == "root_cause"
    assert all(p["treats"] in ("root_cause", "consequence", "finding") for p in d["plan"])
    assert isinstance(d["setup"], list)
    ent = next(c for c in d["checks"] if c["mode"] == "entropy_collapse")
    assert ent["status"] == "critical" and 300 <= ent["onset_step"] <= 420
    assert ent["first_alert_step"] >= ent["onset_step"]
    assert any("learning_rate 5e-6 -> 2.5e-6" in r for r in ent["remedies"])


def test_healthy_example_exits_zero(capsys):
    code, out, _ = run_cli(capsys, "diagnose", "--example", "healthy")
    assert code == 0
    assert "No failure mode found" in out


@pytest.mark.parametrize("fail_on,code", [("critical", 1), ("warning", 1), ("never", 0)])
def test_fail_on(capsys, fail_on, code):
    assert run_cli(capsys, "diagnose", "--example", "kl-drift", "--fail-on", fail_on)[0] == code


def test_markdown_report(capsys):
    code, out, _ = run_cli(capsys, "diagnose", "--example", "kl-drift", "--format", "markdown")
    assert out.startswith("## 🛑 grpo-doctor: kl-drift — critical")
    assert "**Root cause**: kl_drift at step" in out
    assert "| kl_drift | 🛑 critical |" in out


def test_set_overrides_a_threshold(capsys):
    code, out, _ = run_cli(capsys, "diagnose", "--example", "kl-drift", "--format", "json",
                           "--set", "kl_drift.drift_kl=50", "--set", "kl_drift.adapt_kl=60",
                           "--set", "kl_drift.stop_kl=70")
    kl = next(c for c in json.loads(out)["checks"] if c["mode"] == "kl_drift")
    assert kl["status"] == "ok"


def test_map_a_column(capsys, tmp_path):
    f = tmp_path / "r.csv"
    rows = ["step,my_ent"] + [f"{i},{1.0 if i < 50 else 0.01}" for i in range(1, 101)]
    f.write_text("\n".join(rows))
    code, out, _ = run_cli(capsys, "diagnose", str(f), "--format", "json", "--map",
                           "entropy=my_ent")
    d = json.loads(out)
    assert d["metrics"]["entropy"] == "my_ent"
    assert next(c for c in d["checks"] if c["mode"] == "entropy_collapse")["status"] != "skipped"


@pytest.mark.parametrize("args,message", [
    (["diagnose", "/no/such/file.csv"], "/no/such/file.csv: no such file or folder"),
    (["diagnose", "--example", "nope"], "no example named 'nope'"),
    (["diagnose", "--example", "healthy", "--map", "entropy"], "--map takes KEY=VALUE"),
    (["diagnose", "--example", "healthy", "--map", "entropyy=x"], "unknown canonical metric"),
    (["diagnose", "--example", "healthy", "--set", "kl_drift.nope=1"], "has no parameter"),
    (["diagnose", "--example", "healthy", "--select", "nope"], "unknown failure mode"),
    (["diagnose", "--example", "healthy", "--format", "xml"], "--format must be"),
    (["diagnose", "--example", "healthy", "--fail-on", "sometimes"], "--fail-on must be"),
    (["diagnose"], "give a log to diagnose"),
    (["explain", "nope"], "nothing to explain for 'nope': not a failure mode or a word"),
    (["diagnose", "--bogus"], "No such option"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, args, message):
    code, out, err = run_cli(capsys, *args)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("grpo-doctor: error: ")
    assert message in err
    assert "Traceback" not in err


def test_not_a_log(capsys, tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(bytes(range(256)) * 4)
    code, _, err = run_cli(capsys, "diagnose", str(f))
    assert code == 2 and "not a training log" in err


def test_empty_file(capsys, tmp_path):
    f = tmp_path / "empty.csv"
    f.write_bytes(b"")
    code, _, err = run_cli(capsys, "diagnose", str(f))
    assert code == 2 and "empty" in err


def test_output_is_atomic_and_never_overwrites_without_force(capsys, tmp_path):
    out = tmp_path / "report.json"
    out.write_text("precious")
    code, _, err = run_cli(capsys, "diagnose", "--example", "healthy", "-f", "json", "-o",
                           str(out))
    assert code == 2 and "already exists" in err and out.read_text() == "precious"
    code, _, _ = run_cli(capsys, "diagnose", "--example", "healthy", "-f", "json", "-o",
                         str(out), "--force")
    assert code == 0 and json.loads(out.read_text())["status"] == "healthy"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temp file left


def test_explain_and_rules(capsys):
    code, out, _ = run_cli(capsys, "explain", "entropy-collapse")
    assert code == 0 and "What it detects" in out and "critical_ratio = 0.1" in out
    code, out, _ = run_cli(capsys, "rules")
    assert code == 0 and "likelihood_displacement" in out


def test_metrics_command(capsys):
    code, out, _ = run_cli(capsys, "metrics", str(_example("likelihood-displacement")))
    assert code == 0
    assert "log_prob_mean" in out and "rollout/old_log_prob" in out


def test_markup_in_names_prints_literally(capsys, tmp_path):
    f = tmp_path / "[red]x[bold].csv"
    f.write_text("step,train/kl\n" + "\n".join(f"{i},0.1" for i in range(1, 30)))
    code, out, _ = run_cli(capsys, "diagnose", str(f))
    assert "[red]x[bold]" in out


def _example(name):
    from grpo_doctor.api import example_path

    return example_path(name)


def test_help_imports_no_heavy_module():
    code = ("import sys, grpo_doctor.cli; heavy = [m for m in ('pandas', 'numpy', 'scipy', "
            "'wandb', 'tensorboard', 'pyarrow', 'rich', 'ray', 'boto3') if m in sys.modules]; "
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("args", [["rules"], ["explain", "entropy-collapse"], ["--version"]])
def test_small_commands_import_no_pandas_or_numpy(args):
    """What they print is the rules' declarations: the detectors' numpy and pandas load on
    first use (grpo_doctor.lazy), so these stay as fast as --help. The import graph is checked,
    not the time, which a shared machine would make flaky."""
    code = ("import sys\nfrom grpo_doctor.cli import main\n"
            f"try:\n    main({args!r})\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "heavy = [m for m in ('pandas', 'numpy', 'pyarrow', 'scipy') if m in sys.modules]\n"
            "print(heavy, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() and done.stderr.strip() == "[]"


def test_python_dash_m_works():
    p = subprocess.run([sys.executable, "-m", "grpo_doctor", "diagnose", "--example", "healthy",
                        "-f", "json"], capture_output=True, text=True)
    assert p.returncode == 0 and json.loads(p.stdout)["status"] == "healthy"


@pytest.mark.parametrize(("command", "name", "looks"), [
    (("diagnose", "--example", "kl-drift"), "r.json", "json"),
    (("diagnose", "--example", "kl-drift"), "r.md", "## "),
    (("diagnose", "--example", "kl-drift"), "r.txt", "CRITICAL"),
    (("diagnose", "--example", "kl-drift"), "r.xml", "CRITICAL"),  # no junit here: terminal
    (("diagnose", "--example", "kl-drift", "-f", "terminal"), "r2.json", "CRITICAL"),
    (("audit", "EXAMPLES"), "a.xml", "<?xml"),
    (("audit", "EXAMPLES"), "a.json", "json"),
])
def test_a_report_file_gets_the_format_its_extension_names(capsys, tmp_path, command, name,
                                                           looks):
    """``-o report.json`` had received the terminal text (helper-42): with no --format, the
    file's extension names it, among the formats the command writes; a given one wins."""
    from tests.helpers import REPO

    out = tmp_path / name
    args = [str(REPO / "grpo_doctor" / "examples") if a == "EXAMPLES" else a for a in command]
    code, _, err = run_cli(capsys, *args, "-o", str(out))
    assert code in (0, 1), err
    text = out.read_text()
    if looks == "json":
        json.loads(text)
    else:
        assert text.lstrip().startswith(looks), text[:80]


def test_output_file_gets_normal_permissions(capsys, tmp_path):
    import os
    import stat

    out = tmp_path / "r.json"
    run_cli(capsys, "diagnose", "--example", "healthy", "-f", "json", "-o", str(out))
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask


def test_a_folder_holding_one_log_file_is_that_log(capsys, tmp_path):
    import shutil

    from grpo_doctor.api import example_path

    shutil.copy(example_path("kl-drift"), tmp_path / "metrics.csv")
    (tmp_path / "notes.txt").write_text("nothing to see\n")
    code, out, _ = run_cli(capsys, "diagnose", str(tmp_path), "-f", "json")
    # A generic file name: the run is named by its folder.
    assert code == 1 and json.loads(out)["run"]["name"] == tmp_path.name


def test_a_folder_holding_several_logs_says_so(capsys, tmp_path):
    """Not "folder format not recognised": what the folder holds, and what to do instead."""
    import shutil

    from grpo_doctor.api import example_path

    names = ["a_run.csv", "b_run.csv", "c_run.csv", "d_run.csv", "e_run.csv"]
    for name in names[:4]:
        shutil.copy(example_path("healthy"), tmp_path / name)
    (tmp_path / "notes.txt").write_text("nothing to see\n")
    code, out, err = run_cli(capsys, "diagnose", str(tmp_path))
    assert (code, out) == (2, "")
    assert err == (f"grpo-doctor: error: {tmp_path} holds 4 training logs (a_run.csv, "
                   "b_run.csv, c_run.csv, d_run.csv): diagnose one of them, or audit the "
                   "folder\n")
    shutil.copy(example_path("healthy"), tmp_path / names[4])
    _, _, err = run_cli(capsys, "diagnose", str(tmp_path))
    assert "holds 5 training logs (a_run.csv, b_run.csv, c_run.csv, d_run.csv, ...)" in err


def test_an_empty_folder_says_no_training_log_as_audit_does(capsys, tmp_path):
    """Not "folder format not recognised; formats: run-folder, ...": no log in it."""
    code, out, err = run_cli(capsys, "diagnose", str(tmp_path))
    assert (code, out) == (2, "")
    assert err == f"grpo-doctor: error: no training log found in {tmp_path} (the folder is empty)\n"
    (tmp_path / "notes.txt").write_text("nothing to see\n")
    _, _, err = run_cli(capsys, "diagnose", str(tmp_path))
    assert err.startswith(f"grpo-doctor: error: no training log found in {tmp_path} (1 entry, "
                          "none a log in a format grpo-doctor reads: run-folder, ")


def _judged(out):
    return {c["mode"] for c in json.loads(out)["checks"]}


def test_select_and_ignore_take_comma_separated_lists_or_repetition(capsys):
    base = ["diagnose", "--example", "kl-drift", "-f", "json"]
    for select in (["--select", "kl_drift,entropy-collapse"],
                   ["--select", "kl_drift", "--select", "entropy_collapse"],
                   ["--select", " kl_drift , ", "--select", "entropy_collapse"]):
        code, out, err = run_cli(capsys, *base, *select)
        assert err == "" and _judged(out) == {"kl_drift", "entropy_collapse"}
    code, out, _ = run_cli(capsys, *base, "--ignore", "kl_drift,reward_hacking", "--ignore",
                           "tool_spam")
    assert json.loads(out)["config"]["ignored"] == ["kl_drift", "reward_hacking", "tool_spam"]
    code, _, err = run_cli(capsys, *base, "--select", "kl_drift,kl_drfit")
    assert code == 2 and "--select: unknown failure mode 'kl_drfit'" in err


def test_a_config_list_may_be_comma_separated_too(capsys, tmp_path, monkeypatch):
    (tmp_path / "grpo-doctor.toml").write_text('ignore = "kl_drift, tool_spam"\n')
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(capsys, "diagnose", "--example", "kl-drift", "-f", "json")
    assert json.loads(out)["config"]["ignored"] == ["kl_drift", "tool_spam"]


def test_version_comes_from_the_package_metadata(capsys):
    from importlib.metadata import version

    import grpo_doctor

    code, out, err = run_cli(capsys, "--version")
    assert (code, out, err) == (0, f"grpo-doctor {version('grpo-doctor')}\n", "")
    assert grpo_doctor.__version__ == version("grpo-doctor")
    p = subprocess.run([sys.executable, "-m", "grpo_doctor", "--version"], capture_output=True,
                       text=True)
    assert p.returncode == 0 and p.stdout == out


def test_the_readme_config_examples_load_alike_and_demo_exits_0(capsys, tmp_path):
    """The configuration page's pyproject.toml table and its grpo-doctor.toml (no
    [tool.grpo-doctor] header: the table is the top level) are the same settings; `demo` exits
    0 on the critical run it shows, as the README says."""
    import re
    from pathlib import Path

    from grpo_doctor.config import load_settings

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    section = (root / "docs" / "configuration.md").read_text()
    pyproject, own, rewards = re.findall(r"```toml\n(.*?)```", section, re.S)
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "grpo-doctor.toml").write_text(rewards)  # the [rewards] example loads
    assert load_settings(tmp_path / "r" / "grpo-doctor.toml").reward_roles == {
        "mc_idx_reward": "correctness", "mdi_reward": "format"}
    assert "[tool.grpo-doctor]" in pyproject and "[tool." not in own
    assert "no `[tool.grpo-doctor]` header" in section
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "pyproject.toml").write_text(pyproject)
    (tmp_path / "b" / "grpo-doctor.toml").write_text(own)
    a = load_settings(tmp_path / "a" / "pyproject.toml")
    b = load_settings(tmp_path / "b" / "grpo-doctor.toml")
    assert (a.column_map, a.params, a.ignore, a.fail_on) == (
        b.column_map, b.params, b.ignore, b.fail_on) and a.ignore == ("kl_drift",)
    code, out, _ = run_cli(capsys, "demo")
    assert code == 0 and "CRITICAL" in out
    assert "`demo` exits 0 whatever it finds" in " ".join(readme.split())


def _run_with_columns(folder, entropy_column: str) -> str:
    """A small healthy-looking run whose entropy is logged as ``entropy_column``."""
    import numpy as np

    steps = np.arange(1, 41)
    lines = [f"step,reward,{entropy_column}"]
    lines += [f"{s},{0.2 + 0.01 * s:.3f},{1.0 - 0.001 * s:.4f}" for s in steps]
    path = folder / f"{entropy_column.replace('/', '_')}.csv"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_a_config_file_map_applies_where_the_log_has_the_column(capsys, tmp_path, monkeypatch):
    """The README's config maps entropy = "policy/entropy": a project-wide file meets logs of
    other frameworks, which lack the column; it applies where the column is, and only a
    --map on the command line (a typo for this log) is an error."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "grpo-doctor.toml").write_text('[map]\nentropy = "ent_of_my_trainer"\n')
    has = _run_with_columns(tmp_path, "ent_of_my_trainer")  # no framework's name: the map's
    lacks = _run_with_columns(tmp_path, "actor/entropy")
    code, out, err = run_cli(capsys, "metrics", has)
    assert code == 0 and re.search(r"entropy +<- ent_of_my_trainer", out)
    code, out, err = run_cli(capsys, "metrics", lacks)
    assert code == 0 and err == "" and re.search(r"entropy +<- actor/entropy", out)
    code, _, err = run_cli(capsys, "diagnose", lacks, "--map", "entropy=ent_of_my_trainer")
    assert code == 2 and "--map names a column not in" in err
    # In audit's worker processes too (the map crosses a process boundary).
    code, out, err = run_cli(capsys, "audit", str(tmp_path), "-j", "2", "-f", "json")
    doc = json.loads(out)
    assert doc["errors"] == [] and len(doc["runs"]) == 2
    mapped = {r["run"]["name"]: r["metrics"] for r in doc["runs"]}
    assert all("entropy" in metrics for metrics in mapped.values()), mapped


def test_metrics_wraps_to_the_terminal_and_not_into_a_pipe(capsys, tmp_path, monkeypatch):
    """`metrics` printed 123 unmapped names on one line at any width."""
    names = [f"val-aux/openai/gsm8k/component_{i}/mean@1" for i in range(40)]
    path = tmp_path / ("a_rather_long_run_folder_name_" * 3 + "metrics.csv")
    rows = [",".join(["step", "reward", *names])]
    rows += [",".join([str(s), f"{0.1 * s:.2f}", *["1.0"] * len(names)]) for s in range(1, 6)]
    path.write_text("\n".join(rows) + "\n")
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(capsys, "metrics", str(path))
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 80
    assert all(name in out.replace("\n", " ") for name in names)  # wrapped at commas, whole
    assert "(5 values)" in out
    monkeypatch.delenv("COLUMNS")
    code, out, _ = run_cli(capsys, "metrics", str(path))  # captured: not a terminal
    assert code == 0 and any(len(line) > 80 for line in out.splitlines())


COMMANDS = ["diagnose", "audit", "compare", "audit-merge", "fetch", "demo", "metrics",
            "explain", "rules", "examples", "watch"]


def _options_help(capsys, command: str) -> str:
    code, out, _ = run_cli(capsys, command, "--help")
    assert code == 0
    return out.split("\nOptions:\n", 1)[1] if "\nOptions:\n" in out else ""


@pytest.mark.parametrize("command", COMMANDS)
def test_help_shows_readable_metavars_not_python_types(capsys, monkeypatch, command):
    """`--map <list[str]>`, `paths... <list[str]>`, `{paths}...`: every option and argument
    names what it takes, not its Python type, in the usage line too."""
    monkeypatch.setenv("COLUMNS", "200")
    code, whole, _ = run_cli(capsys, command, "--help")
    assert code == 0
    assert re.findall(r"<[a-zA-Z][\w\[\], ]*>", whole) == []
    assert not re.search(r"\{[a-z_]+\}", whole.splitlines()[0]), whole.splitlines()[0]
    options = _options_help(capsys, command)
    if "--map" in options:
        assert "--map CANONICAL=COLUMN" in options


@pytest.mark.parametrize("command", COMMANDS)
def test_force_names_only_the_commands_own_outputs(capsys, monkeypatch, command):
    """compare and audit-merge listed --png (and audit-merge --html), which they lack."""
    monkeypatch.setenv("COLUMNS", "200")
    entries = re.split(r"\n(?=  -)", "\n" + _options_help(capsys, command))  # one per option
    force = next((e for e in entries if e.strip().startswith("--force")), None)
    if force is None:
        return
    named = re.findall(r"--[\w-]+", force.split("--force", 1)[1])
    assert all(any(re.match(rf"\s+(-\w, )?{o}\b", e) for e in entries) for o in named)
    expected = {"diagnose": ["--output", "--html", "--png"],
                "audit": ["--output", "--html", "--write-baseline"],
                "compare": ["--output", "--html"], "audit-merge": ["--output"]}
    assert named == expected[command]



def test_a_run_name_cut_in_the_middle_as_a_report_shows_it_picks_the_run(tmp_path, capsys):
    """audit shows a long run name cut in the middle ("grpo_formal_1p5b…035927Z"); pasted
    into --run it had been "no run named" (helper-83)."""
    rows = ["run,step,reward"] + [f"{name},{s},{0.01 * s}" for name in (
        "grpo_formal_1p5b_seed42_20260720T031006Z", "grpo_formal_1p5b_seed123_20260720T035927Z")
        for s in range(1, 30)]
    (tmp_path / "runs.csv").write_text("\n".join(rows) + "\n")
    code, out, _ = run_cli(capsys, "diagnose", str(tmp_path / "runs.csv"), "--run",
                           "grpo_formal_1p5b…035927Z")
    assert code == 0 and "grpo_formal_1p5b_seed123_20260720T035927Z" in out
    code, _, err = run_cli(capsys, "diagnose", str(tmp_path / "runs.csv"), "--run",
                           "grpo_formal…Z")
    assert code == 2 and "more than one run matches" in err


def test_run_picks_a_log_of_a_folder_by_the_name_audit_gives_it(tmp_path, capsys):
    """--run had been passed over for a folder of several logs (helper-84): "holds 4
    training logs" came first, so a name copied from `audit FOLDER` could not be used."""
    rows = "".join(f"{{'loss': 0.01, 'reward': {0.2 + 0.01 * s:.2f}, 'epoch': {s / 30:.2f}}}\n"
                   for s in range(30))
    for name in ("run_1", "run_1_lr_1e-6", "grpo_formal_1p5b_seed3_20260720T035927Z"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.log").write_text(rows)
    for args, shown in ((["--run", "run_1"], "run_1"),
                        (["--run", "grpo_formal_1p5b_…_20260720T035927Z"],
                         "grpo_formal_1p5b_seed3_20260720T035927Z")):
        code, out, _ = run_cli(capsys, "diagnose", str(tmp_path), *args)
        assert code == 0 and out.split("\n", 1)[0].endswith(f"· {shown}"), out
    (tmp_path / "a.log").write_text(rows)
    (tmp_path / "b.log").write_text(rows)
    code, out, _ = run_cli(capsys, "diagnose", str(tmp_path), "--run", "b")
    assert code == 0 and out.split("\n", 1)[0].endswith("· b"), out


def test_run_picks_a_run_inside_a_file_of_a_folder_as_audit_names_it(tmp_path, capsys):
    """A name copied from `audit FOLDER` for a run inside a file that holds several (a CSV of
    two runs, beside a folder of consoles) had been refused at the folder (helper-90)."""
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "two.csv").write_text("run,step,reward,kl\n" + "".join(
        f"{name},{s},{0.2 + 0.01 * s:.2f},0.001\n" for name in ("seed_a", "seed_b")
        for s in range(1, 41)))
    (tmp_path / "logs").mkdir()
    for name in ("one", "two"):
        (tmp_path / "logs" / f"{name}.log").write_text("".join(
            f"{{'loss': 0.01, 'reward': {0.2 + 0.01 * s:.2f}, 'epoch': {s / 30:.2f}}}\n"
            for s in range(30)))
    code, out, _ = run_cli(capsys, "diagnose", str(tmp_path), "--run", "seed_b")
    assert code == 0 and out.split("\n", 1)[0].endswith("· seed_b"), out
    code, _, err = run_cli(capsys, "diagnose", str(tmp_path), "--run", "nope")
    assert code == 2 and "diagnose one of them" in err
