"""Every report renders for every diagnosis there is, and reads verdict first.

The diagnoses: every rule's firing and quiet cases (tests/rules), the same with their evidence
turned into numpy scalars and arrays (NaN and inf among them), every run of the tiny-GRPO
corpus and every shared real run (skipped when ../shared/real-runs is absent). Each goes
through the terminal report (60, 80 and 160 columns, with and without colour, and -v), Markdown,
JSON and HTML. The corpus and the real runs also go through the CLI, whose exit code must be
the one the JSON status implies.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_doctor import api
from grpo_doctor.cli import EXIT_INTERNAL
from grpo_doctor.engine import diagnose
from grpo_doctor.errors import GrpoDoctorError
from grpo_doctor.findings import Diagnosis
from grpo_doctor.reporters.html import render_html
from grpo_doctor.reporters.json_report import render_json
from grpo_doctor.reporters.markdown import escape, render_markdown
from grpo_doctor.reporters.terminal import render_to_text
from grpo_doctor.store import Run
from tests.helpers import REAL_RUNS, run_cli
from tests.rules.cases import CASES, diagnosed

WIDTHS = (60, 80, 160)
HEALTHY_MAX_LINES = 15
CORPUS = Path(__file__).parent / "fixtures" / "corpus"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")



def cells(line: str) -> int:
    from rich.cells import cell_len

    return cell_len(_ANSI.sub("", line))


def check_terminal(text: str, diagnosis: Diagnosis, width: int, verbose: bool = False) -> None:
    """What every terminal report must be: no line wider than the console, the status in the
    first three lines, the root cause in the first six, a healthy run short."""
    lines = [_ANSI.sub("", line) for line in text.splitlines()]
    wide = [line for line in text.splitlines() if cells(line) > width]
    assert not wide, wide
    assert any(diagnosis.status.upper() in line for line in lines[:3]), lines[:3]
    if diagnosis.root_cause is not None:
        assert any(line.startswith(("root cause: ", "main finding: ")) for line in lines[:6]), \
            lines[:6]
        assert any("do this first: " in line for line in lines[:12]), lines[:12]
    if diagnosis.status == "healthy" and width == 80 and not verbose:
        assert len(lines) <= HEALTHY_MAX_LINES, text


def render_everything(diagnosis: Diagnosis, run: Run | None, widths=WIDTHS) -> None:
    for width in widths:
        for color in (False, True):
            check_terminal(render_to_text(diagnosis, run, width, color=color), diagnosis, width)
    check_terminal(render_to_text(diagnosis, run, 80, verbose=True), diagnosis, 80, True)
    md = render_markdown(diagnosis)
    assert md.startswith("## ") and diagnosis.status in md.splitlines()[0]
    doc = json.loads(render_json(diagnosis))
    assert doc["status"] == diagnosis.status
    if run is not None:
        page = render_html(diagnosis, run)
        assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")


# --- the rules' cases, and their evidence as numpy -------------------------------------------


_BUILDERS = list({case.build: case for case in CASES}.values())


@pytest.fixture(scope="module")
def case_diagnoses() -> dict[str, tuple[Run, Diagnosis]]:
    return {case.name: (case.build(), diagnosed(case)) for case in _BUILDERS}


def numpy_evidence(value):
    """The same evidence as a rule computing with numpy might hand it over."""
    if isinstance(value, bool):
        return np.bool_(value)
    if isinstance(value, int):
        return np.int64(value)
    if isinstance(value, float):
        return np.float64(value)
    if isinstance(value, dict):
        return {k: numpy_evidence(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return np.asarray(value)
        return [numpy_evidence(v) for v in value]
    return value


EXTRA_EVIDENCE = {
    "an_array": np.array([0.1234567891, np.nan, np.inf, -np.inf]),
    "a_matrix": np.ones((2, 3)),
    "a_float32": np.float32(1.5e-7),
    "a_flag": np.bool_(False),
    "spike_steps": np.array([3, 17]),
    "nested": {"inner": np.array([1, 2, 3]), "share": np.float64(0.4242)},
    "empty": np.array([]),
    "corroboration": np.array(["reward falling", "grad norm rising"]),
    "threshold": np.str_("a threshold from numpy"),
}


def with_numpy(diagnosis: Diagnosis) -> Diagnosis:
    checks = tuple(replace(c, evidence={**numpy_evidence(dict(c.evidence)), **EXTRA_EVIDENCE},
                           onset_step=c.onset_step, first_alert_step=c.first_alert_step)
                   for c in diagnosis.checks)
    return replace(diagnosis, checks=checks)


@pytest.mark.parametrize("name", [case.name for case in _BUILDERS])
def test_every_rule_case_renders_in_every_format(case_diagnoses, name):
    run, diagnosis = case_diagnoses[name]
    render_everything(diagnosis, run)


@pytest.mark.parametrize("name", [case.name for case in _BUILDERS])
def test_numpy_evidence_renders_and_json_keeps_full_precision(case_diagnoses, name):
    run, diagnosis = case_diagnoses[name]
    noisy = with_numpy(diagnosis)
    render_everything(noisy, run, widths=(80,))
    doc = json.loads(render_json(noisy))
    evidence = doc["checks"][0]["evidence"]
    assert evidence["an_array"] == [0.1234567891, None, None, None]
    assert evidence["a_matrix"] == [[1.0] * 3] * 2 and evidence["a_flag"] is False
    assert evidence["a_float32"] == float(np.float32(1.5e-7))


def test_a_report_without_a_run_or_a_plan_still_renders(case_diagnoses):
    _, diagnosis = case_diagnoses["entropy collapse, reward stalls"]
    bare = replace(diagnosis, plan=(), root_cause=None, hints=(), notes=())
    text = render_to_text(bare, None, 80)
    assert "what to change" not in text.lower()
    assert "• " in text  # without the plan, each finding lists its own remedies
    render_markdown(bare)


# --- the corpus and the real runs, through the CLI --------------------------------------------


def _sources() -> list[Any]:
    corpus = sorted(p for p in CORPUS.iterdir() if p.is_dir()) if CORPUS.is_dir() else []
    real = sorted(p for p in REAL_RUNS.rglob("*") if p.is_file() and p.name != "README.md") \
        if REAL_RUNS.is_dir() else []
    # Every real run too, each three times through the CLI: a sweep, one of the slow tests.
    return [*corpus, *(pytest.param(p, marks=pytest.mark.slow) for p in real)]


def _id(path: Path) -> str:
    for root in (REAL_RUNS, CORPUS):
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            continue
    return path.name


@pytest.mark.parametrize("path", _sources(), ids=_id)
def test_every_run_renders_with_the_exit_code_its_status_implies(capsys, monkeypatch,
                                                                 tmp_path, path):
    try:
        results = api.diagnose_source(path)
    except GrpoDoctorError:
        code, out, err = run_cli(capsys, "diagnose", str(path))
        assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
        return
    for result in results:
        pick = ["--run", result.run.name] if len(results) > 1 else []
        code, out, err = run_cli(capsys, "diagnose", str(path), *pick, "-f", "json")
        assert err == ""
        status = json.loads(out)["status"]
        assert status == result.diagnosis.status
        assert code == (1 if status == "critical" else 0)
        monkeypatch.setenv("COLUMNS", "80")
        html = tmp_path / "report.html"
        code_t, out, err = run_cli(capsys, "diagnose", str(path), *pick, "--html", str(html),
                                   "--force")
        assert code_t == code and err == ""
        check_terminal(out, result.diagnosis, 80)
        assert html.read_text().rstrip().endswith("</html>")
        for color in (False, True):
            check_terminal(render_to_text(result.diagnosis, result.run, 160, color=color),
                           result.diagnosis, 160)
        assert render_markdown(result.diagnosis).startswith("## ")


# --- what the reports say, and how ------------------------------------------------------------


@pytest.fixture(scope="module")
def failing() -> api.Result:
    (result,) = api.diagnose_source(CORPUS / "20_lr_warmup_to_0.3")
    assert len(result.diagnosis.findings) >= 3
    return result


def test_findings_are_listed_in_the_order_they_began(failing):
    text = render_to_text(failing.diagnosis, failing.run, 160)
    heads = [line for line in text.splitlines() if line[:2] in ("✗ ", "! ")]
    onsets = [int(re.search(r"onset ([\d,]+)", h).group(1).replace(",", "")) for h in heads]
    assert len(heads) == len(failing.diagnosis.findings)
    assert onsets == sorted(onsets)


def test_plan_once_with_the_findings_it_answers(failing):
    d = failing.diagnosis
    text = render_to_text(d, failing.run, 400, verbose=True)
    assert text.count(d.plan[0].action) == 2  # "do this first", then item 1 of the plan
    flat = " ".join(text.split())  # a long tag wraps even at 400 columns
    for item in d.plan:
        tag = f"[{', '.join(item.modes)}"
        assert tag + ("; follows from the root cause]" if item.treats == "consequence"
                      else "]") in flat
    short = render_to_text(d, failing.run, 80)
    if len(d.plan) > 5:
        assert f"and {len(d.plan) - 5} more (-v)" in short


def test_a_root_cause_dated_by_its_own_words_says_its_step_once(failing):
    """An earlier episode's words begin "at step N, as seen then"; the root-cause line does
    not put "at step N:" before them again."""
    d = failing.diagnosis
    episode = "at step 12, as seen then: KL rose from 0.003 to 0.589; cleared by step 50"
    dated = replace(d, root_cause=replace(d.root_cause, step=12, summary=episode))
    line = render_to_text(dated, failing.run, 400).splitlines()[2]
    assert line == (f"root cause: {d.root_cause.mode} at step 12, as seen then: KL rose from "
                    "0.003 to 0.589; cleared by step 50")
    assert (f"**Root cause**: {d.root_cause.mode} at step 12, as seen then: KL rose"
            in render_markdown(dated))
    undated = replace(d, root_cause=replace(d.root_cause, step=12, summary="KL rose"))
    assert f"root cause: {d.root_cause.mode} at step 12: KL rose" in render_to_text(
        undated, failing.run, 400)


def test_passed_and_skipped_each_one_line_with_what_to_log(failing):
    text = render_to_text(failing.diagnosis, failing.run, 400)
    passed = [line for line in text.splitlines() if line.startswith("passed: ")]
    skipped = [line for line in text.splitlines() if line.startswith("skipped: ")]
    assert len(passed) == 1 and len(skipped) == 1
    ok = [c.mode for c in failing.diagnosis.checks if c.status.value == "ok"]
    assert passed[0] == "passed: " + ", ".join(ok)
    # No tool metric: the agentic checks are one short gap, not two lines of what to log.
    assert "tool_spam, tool_failure (agentic runs only: no tool metric logged)" in skipped[0]


def test_wrapped_lines_hang_under_their_first_word(failing):
    lines = render_to_text(failing.diagnosis, failing.run, 60).splitlines()
    for above, line in zip(lines, lines[1:]):
        if above.startswith("root cause: ") and line.startswith(" "):
            assert line.startswith(" " * len("root cause: ")) and line[12] != " "
        if re.match(r"  \d\. ", above) and line.startswith(" ") and not re.match(r" +\d+\.",
                                                                                   line):
            assert line.startswith(" " * 5) and not line.startswith(" " * 6)


def test_verbose_shows_every_check_and_its_evidence(failing):
    text = render_to_text(failing.diagnosis, failing.run, 160, verbose=True)
    for c in failing.diagnosis.checks:
        assert c.mode in text
    assert "Every check:" in text and "┃ summary" in text
    ok = next(c for c in failing.diagnosis.checks if c.status.value == "ok" and c.evidence)
    label, _ = next(iter(__import__("grpo_doctor.reporters.evidence",
                                    fromlist=["items"]).items(ok.evidence)))
    assert f"    {label}: " in text
    assert "Every check:" not in render_to_text(failing.diagnosis, failing.run, 160)


@pytest.mark.parametrize("verbose", [False, True])
def test_a_long_source_path_is_shortened_from_the_left_not_wrapped(failing, verbose):
    """`-v` wrapped the path mid-word ("…declare-a100-0" / ".3275755.0"): it is shortened
    from the left, keeping the file name, with or without -v."""
    name = "events.out.tfevents.1740427850.declare-a100-0.3275755.0"
    source = "/work/shared/real-runs/some/deeper/folder/tensorboard/" + name
    diagnosis = replace(failing.diagnosis, run=replace(failing.diagnosis.run, source=source))
    lines = render_to_text(diagnosis, failing.run, 80, verbose=verbose).splitlines()
    assert max(len(line) for line in lines) <= 80
    (holder,) = [line for line in lines[:4] if line.endswith(name[-20:])]  # its end, whole
    shown = holder.split(" · ")[-1]
    assert shown.startswith("…") and source.endswith(shown[1:]) and len(shown) > 30
    assert not any(line.strip() and source.endswith(line.strip()) and line != holder
                   for line in lines)  # no wrapped tail of it
    if verbose:  # a line of its own: as much of the path as the terminal holds
        assert holder == "…" + source[-79:]


@pytest.mark.parametrize("width", [80, 40])
def test_a_long_run_name_stays_on_the_status_line_shortened(failing, width):
    """At 80 columns a long run name went to a line of its own, broken mid-token, leaving
    "WARNING · " with nothing after it: it stays on the status line, cut with …."""
    name = "OpenEnv_gpt_oss_(20B)_Reinforcement_Learning_2048_Game__2025-11-25_8a1c943e_2b8cd9"
    diagnosis = replace(failing.diagnosis, run=replace(failing.diagnosis.run, name=name))
    first, second = render_to_text(diagnosis, failing.run, width).splitlines()[:2]
    status = diagnosis.status.upper()
    assert first.startswith(f"{status} · OpenEnv_gpt_oss_") and first.endswith("…")
    assert len(first) == width and name.startswith(first[len(status) + 3:-1])
    assert second.startswith("steps ")


def test_evidence_reads_as_text_with_units():
    from grpo_doctor.reporters.evidence import items, value

    ev = {"late_share": 0.975, "entropy_now": 5.025222, "spike_ratios": [15.61, 7.2],
          "corroboration": ["reward falling"], "peak_step": 12345, "trend_p": 1.1e-22,
          "shapes": [{"shape": "length x1.8", "share": 0.5, "onset": 150}],
          "reward_improving": False, "empty": [], "threshold": "KL > 10",
          "late_median": 0.04210992902517319}
    shown = dict(items(ev))
    assert shown == {
        "late share": "98%", "entropy now": "5.03 nats", "spike ratios": "15.6x, 7.2x",
        "corroboration": "reward falling", "peak step": "12,345", "trend p": "1e-22",
        "shapes": "length x1.8 (share 50%, onset 150)", "reward improving": "no",
        "late median": "0.0421"}
    assert value("x", np.array([1.0, np.nan])) == "1, NaN"
    assert value("x", float("inf")) == "inf"


@pytest.mark.parametrize("text,expected", [
    ("kl_drift", "kl_drift"),                      # intraword underscores are not emphasis
    ("0.5-5 (drifting), x1.5, 8 -> 16", "0.5-5 (drifting), x1.5, 8 -> 16"),
    ("KL < 0.3 and > 10", "KL < 0.3 and > 10"),
    ("_private", "\\_private"),
    ("a*b [x](y) `c` ~d~ |e|", "a\\*b \\[x\\](y) \\`c\\` \\~d\\~ \\|e\\|"),
    ("<script>alert(1)</script>", "&lt;script>alert(1)&lt;/script>"),
    ("# heading", "\\# heading"),
    ("- item", "\\- item"),
    ("12. item", "12\\. item"),
    ("AT&T &amp;", "AT&T \\&amp;"),
    ("two\nlines", "two lines"),
])
def test_markdown_escapes_only_what_markdown_would_read_as_syntax(text, expected):
    assert escape(text) == expected


def test_an_internal_error_is_one_line_and_exit_3(capsys, monkeypatch):
    from grpo_doctor.reporters import terminal

    def broken(*args, **kwargs):
        raise RuntimeError("the reporter broke\nover two lines")

    monkeypatch.setattr(terminal, "build", broken)
    monkeypatch.delenv("GRPO_DOCTOR_DEBUG", raising=False)
    code, out, err = run_cli(capsys, "diagnose", "--example", "healthy")
    assert code == EXIT_INTERNAL == 3
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("grpo-doctor: internal error: RuntimeError: the reporter broke over")


def test_counts_agree_with_their_nouns():
    from grpo_doctor.text import agree, plural

    assert [plural(n, "value") for n in (0, 1, 2, 1000)] == [
        "0 values", "1 value", "2 values", "1,000 values"]
    assert plural(2, "entry", "entries") == "2 entries"
    assert (agree(1, "was", "were"), agree(3, "was", "were")) == ("was", "were")


def test_no_message_says_thing_s():
    """"1 value(s)": every count in a message agrees with its noun (text.plural)."""
    import io
    import tokenize

    import grpo_doctor

    said = []
    strings = (tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING))
    for path in Path(grpo_doctor.__file__).parent.rglob("*.py"):
        for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
            if tok.type in strings and not tok.string.startswith(('"""', "'''")) and \
                    re.search(r"[a-z]\(s\)(?![}\w])", tok.string):
                said.append(f"{path.name}:{tok.start[0]}")
    assert said == []


def test_skip_reasons_have_no_brackets_inside_brackets(case_diagnoses):
    """"grad_explosion (needs at least 8 logged non-zero grad-norm values (it was 0 on 4 of
    4))": a skip reason in the skipped line holds no parentheses of its own."""
    from grpo_doctor.reporters.outline import skipped_line
    from tests.helpers import make_run

    g = np.zeros(12)
    g[:3] = 0.5
    zero_grads = diagnose(make_run(train__grad_norm=g, train__loss=np.linspace(1, 0, 12)))
    assert zero_grads.check("grad_explosion").summary == (
        "needs at least 8 logged non-zero grad-norm values, and it was 0 on 9 of 12")
    for d in [zero_grads, *(d for _, d in case_diagnoses.values())]:
        for reason in re.findall(r"\(([^;]*)\)(?:;|$)", skipped_line(d.checks)):
            assert "(" not in reason, skipped_line(d.checks)


def test_a_window_longer_than_the_run_says_it_covered_the_whole_run():
    from grpo_doctor.reporters.evidence import items

    assert dict(items({"window_steps": 1000}, span=199))["window steps"] == \
        "the whole run, 199 (set to 1,000)"
    assert dict(items({"window_steps": 1000}, span=5000))["window steps"] == "1,000"
    assert dict(items({"window_steps": 1000}))["window steps"] == "1,000"


def test_metrics_says_where_the_steps_came_from():
    """`metrics` printed "(step from given)": it says the importer's own steps, the step
    column, or row order."""
    import pandas as pd

    from grpo_doctor.reporters.metrics_report import render_metrics
    from grpo_doctor.store import build_run
    from tests.helpers import make_run

    given = render_metrics([make_run(train__loss=np.ones(3))])
    frame = pd.DataFrame({"global_step": [5, 10], "loss": [1.0, 2.0]})
    column = render_metrics([build_run(frame, name="c", source="c.csv", format="csv")])
    rows = render_metrics([build_run(frame.drop(columns="global_step"), name="r",
                                     source="r.csv", format="csv")])
    assert "(steps as the test importer read them)" in given and "given" not in given
    assert "(step column: global_step)" in column
    assert "(steps: row order, no step column)" in rows


_ONSETS = st.one_of(st.integers(0, 999), st.integers(0, 10**6), st.integers(0, 10**18))


@pytest.fixture(scope="module")
def two_findings():
    from grpo_doctor.api import example_path
    from grpo_doctor.importers import load_runs

    run = load_runs(str(example_path("entropy-collapse")))[0]
    return run, diagnose(run)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(width=st.integers(40, 80), verbose=st.booleans(), data=st.data())
def test_no_onset_is_cut_at_narrow_widths(two_findings, width, verbose, data):
    """Numbers were cut below 60 columns (issue 24: "@14" for onset 145): at every width
    each finding's onset and first alert appear whole, and no line is wider."""
    run, diagnosis = two_findings
    checks = []
    for c in diagnosis.checks:
        if c.fired:
            onset = data.draw(_ONSETS)
            c = replace(c, onset_step=onset, first_alert_step=onset + data.draw(_ONSETS))
        checks.append(c)
    shown = replace(diagnosis, checks=tuple(checks))
    text = render_to_text(shown, run, width, verbose=verbose)
    assert max(cells(line) for line in text.splitlines()) <= width, text
    numbers = {n.rstrip(",") for n in re.findall(r"\d[\d,]*", text)}
    for c in shown.findings:
        assert f"{c.onset_step:,}" in numbers and f"{c.first_alert_step:,}" in numbers, text


def test_a_converging_run_is_headed_by_its_main_finding_not_a_root_cause():
    """"root cause: entropy_collapse" above "nothing urgent: the run is converging" read as a
    failure (helper-36); the text, Markdown and HTML reports head it "main finding". A run
    that broke keeps "root cause"."""
    from grpo_doctor.findings import RootCause
    from grpo_doctor.importers import load_runs

    run = load_runs(api.example_path("kl-drift"))[0]
    base = diagnose(run)
    assert base.root_cause is not None
    calm = replace(base, root_cause=replace(
        base.root_cause, first_action="nothing urgent: the run is converging"))
    for d, label in ((calm, "main finding"), (base, "root cause")):
        assert f"{label}: " in render_to_text(d, run, 100)
        assert f"**{label.capitalize()}**: " in render_markdown(d)
        assert f"<b>{label.capitalize()}</b>: " in render_html(d, run)
    assert isinstance(calm.root_cause, RootCause)


def test_a_healthy_runs_setting_for_the_next_run_is_said_under_its_verdict(capsys, tmp_path):
    """beta 0.5 on a run that learned all the same (trial 40): the fix for the next run stands
    under "No failure mode found" in the terminal and Markdown reports, and beside the run in
    the audit, not at the foot among the notes; the JSON keeps it as a note."""
    import json

    import numpy as np
    import pandas as pd

    from tests.helpers import run_cli

    n = 120
    s = np.arange(1, n + 1)
    pd.DataFrame({"step": s, "reward": 0.3 + 0.5 * s / n + 0.01 * np.sin(s),
                  "kl": 0.01 + 0.0001 * s}).to_csv(tmp_path / "metrics.csv", index=False)
    (tmp_path / "grpo_config.yaml").write_text("beta: 0.5\nlearning_rate: 1.0e-6\n"
                                               "num_generations: 16\n")
    log = str(tmp_path / "metrics.csv")
    _, out, _ = run_cli(capsys, "diagnose", log)
    head, _, tail = out.partition("passed:")
    assert "for the next run: beta 0.5 -> 0.01-0.05" in head, out
    assert "beta 0.5" not in tail
    _, out, _ = run_cli(capsys, "diagnose", log, "-f", "markdown")
    assert "**For the next run**: beta 0.5 -> 0.01-0.05" in out
    _, out, _ = run_cli(capsys, "diagnose", log, "-f", "json")
    assert any("for the next run: beta 0.5" in x for x in json.loads(out)["notes"])
    _, out, _ = run_cli(capsys, "audit", str(tmp_path))
    assert "→ healthy · for the next run: beta 0.5 -> 0.01-0.05" in out, out


def test_a_run_with_tool_metrics_is_told_what_else_to_log():
    """A run that logs tool calls but no failures is agentic: tool_failure's gap says what to
    log, not that the run has no tools."""
    import numpy as np

    from grpo_doctor.engine import diagnose
    from grpo_doctor.reporters.outline import skipped_line
    from tests.helpers import make_run

    n = 40
    d = diagnose(make_run(**{"tools/call_frequency": np.full(n, 1.0),
                             "reward": np.linspace(0.2, 0.6, n)}))
    line = skipped_line(d.checks)
    assert "tool_failure (log tool_failure_rate)" in line and "agentic runs only" not in line


def test_the_audit_says_a_healthy_runs_task_is_still_low(tmp_path, capsys):
    """A partly reachable task learning slowly (correctness 0.1 -> 0.2, trial 51): diagnose
    notes the task is still low; the audit had shown "healthy" alone, read as learning."""
    import numpy as np
    import pandas as pd

    from tests.helpers import run_cli

    n = 200
    s = np.arange(1, n + 1)
    rng = np.random.default_rng(5)
    correct = np.clip(0.1 + 0.11 * s / n + rng.normal(0, 0.02, n), 0, 1)
    pd.DataFrame({"step": s, "reward": correct + 0.5, "rewards/correctness_reward/mean": correct,
                  "rewards/format_reward/mean": np.full(n, 0.5)}).to_csv(
        tmp_path / "metrics.csv", index=False)
    _, out, _ = run_cli(capsys, "diagnose", str(tmp_path / "metrics.csv"))
    assert out.startswith("HEALTHY") and "task's own score is still low" in out, out
    _, out, _ = run_cli(capsys, "audit", str(tmp_path))
    assert "→ healthy · task score still low: correctness_reward 0.1" in out, out


def test_the_fix_of_a_finding_also_critical_is_shown_in_a_short_plan():
    """h120: "also critical: ..., entropy_collapse from step 90 ... the plan below has their
    fixes", while entropy_collapse's fix sat behind "and 9 more (-v)"."""
    from grpo_doctor.config import DoctorConfig
    from grpo_doctor.engine import diagnose
    from grpo_doctor.importers import load_runs
    from grpo_doctor.recipe import flat_config
    from grpo_doctor.reporters import terminal

    trial = Path(__file__).parent / "fixtures" / "trial"
    name = "agentic_tool_spam_nemo_turns"
    d = diagnose(load_runs(trial / f"{name}.csv")[0], DoctorConfig(
        recipe={"learning_rate": {"high": 5e-4}},
        run_config=flat_config(json.loads((trial / f"{name}.config.json").read_text()))))
    text = terminal.render_to_text(d, width=100)
    assert "also critical: advantage_collapse from step 1, entropy_collapse from step 90" \
        in " ".join(text.split()), text
    plan = text.split("What to change, first things first:")[1].split("passed:")[0]
    shown = [line for line in plan.splitlines() if line.strip()[:3].rstrip(".").isdigit()]
    assert len(shown) <= 5, plan
    for mode in ("advantage_collapse", "entropy_collapse"):
        assert f"[{mode}" in plan or f", {mode}" in plan, (mode, plan)
    assert "findings's" not in text
