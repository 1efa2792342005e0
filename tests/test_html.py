"""The HTML report: its structure (one chart per finding plus the dashboard, onset and first-alert
markers where the steps are, the rules' thresholds), escaping, no network, gaps and long series;
the CLI's --html and --png; and the page loaded in a real headless browser (Debian chromium)."""

from __future__ import annotations

import io
import os
import re
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from grpo_doctor import api
from grpo_doctor.engine import diagnose
from grpo_doctor.reporters.html import (
    IndexEntry,
    envelope,
    index_entry,
    render_html,
    render_index,
)
from grpo_doctor.store import Run, build_run
from grpo_doctor.text import fmt
from tests.helpers import REAL_RUNS, REPO, ar1, make_run, run_cli

EXAMPLES = ["healthy", "entropy-collapse", "kl-drift", "likelihood-displacement",
            "grad-explosion", "advantage-collapse"]
HOSTILE = "<script>alert(1)</script>"


# --- a small DOM from html.parser -----------------------------------------------------------


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node] = field(default_factory=list)
    text: list[str] = field(default_factory=list)

    def iter(self, tag: str | None = None, cls: str | None = None):
        for child in self.children:
            if (tag is None or child.tag == tag) and (
                    cls is None or cls in child.attrs.get("class", "").split()):
                yield child
            yield from child.iter(tag, cls)

    def all_text(self) -> str:
        return "".join(self.text) + "".join(c.all_text() for c in self.children)


_VOID = {"meta", "br", "hr", "img", "input", "link"}


class _Tree(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return
        raise AssertionError(f"</{tag}> closes nothing open")

    def handle_data(self, data):
        self.stack[-1].text.append(data)


def parse(text: str) -> Node:
    tree = _Tree()
    tree.feed(text)
    tree.close()
    assert [n.tag for n in tree.stack] == ["#root"], "unclosed elements"
    return tree.root


def example(name: str, params=None) -> tuple[api.Result, str]:
    (result,) = api.diagnose_source(api.example_path(name))
    return result, render_html(result.diagnosis, result.run, params)


@pytest.fixture(scope="module")
def pages() -> dict[str, tuple[api.Result, Node, str]]:
    out = {}
    for name in EXAMPLES:
        result, text = example(name)
        out[name] = (result, parse(text), text)
    return out


def panels(svg: Node) -> list[Node]:
    return list(svg.iter("g", "panel"))


def x_of(panel: Node, step: float) -> float:
    a = panel.attrs
    x0, x1, s0, s1 = (float(a[k]) for k in ("data-x0", "data-x1", "data-s0", "data-s1"))
    return x0 + (step - s0) / (s1 - s0) * (x1 - x0)


def y_of(panel: Node, value: float) -> float:
    a = panel.attrs
    y0, y1, v0, v1 = (float(a[k]) for k in ("data-y0", "data-y1", "data-v0", "data-v1"))
    if a["data-log"] == "1":
        value, v0, v1 = np.log10(value), np.log10(v0), np.log10(v1)
    return y0 + (value - v0) / (v1 - v0) * (y1 - y0)


def thresholds(panel: Node) -> list[float]:
    return [float(t.attrs["data-value"]) for t in panel.iter("line", "threshold")]


def chart(page: Node, mode: str) -> Node:
    section = next(s for s in page.iter("section") if s.attrs.get("id") == f"finding-{mode}")
    (svg,) = section.iter("svg")
    return svg


# --- structure ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", EXAMPLES)
def test_one_chart_per_finding_plus_the_dashboard(pages, name):
    result, page, _ = pages[name]
    svgs = list(page.iter("svg"))
    findings = result.diagnosis.findings
    assert len(svgs) == len(findings) + 1
    assert svgs[-1].attrs["id"] == "chart-dashboard"
    sections = [s.attrs.get("id") for s in page.iter("section")]
    for check in findings:
        assert f"finding-{check.mode}" in sections
    for svg in svgs:
        assert panels(svg), "every chart draws at least one metric"
        for p in panels(svg):
            assert list(p.iter("path", "smooth")), "a rolling median on every panel"
            assert len(list(p.iter("text", "ytick"))) >= 3, "value ticks on every panel"
        assert len(list(panels(svg)[-1].iter("text", "xtick"))) >= 4, "step ticks"


def test_healthy_run_gets_the_dashboard_metrics(pages):
    result, page, _ = pages["healthy"]
    assert result.diagnosis.status == "healthy" and not result.diagnosis.findings
    (svg,) = page.iter("svg")
    metrics = [p.attrs["data-metric"] for p in panels(svg)]
    assert metrics == ["reward_mean", "entropy", "kl", "zero_std_fraction", "grad_norm",
                       "response_length_mean"]
    assert "No failure mode found" in page.all_text()


@pytest.mark.parametrize("name", EXAMPLES[1:])
def test_onset_and_first_alert_drawn_at_their_steps(pages, name):
    result, page, _ = pages[name]
    for check in result.diagnosis.findings:
        svg = chart(page, check.mode)
        for p in panels(svg):
            marks = {m.attrs["class"].split()[1]: m for m in p.iter("line", "marker")}
            assert set(marks) == {"onset", "alert"}
            for kind, step in (("onset", check.onset_step), ("alert", check.shown_alert_step)):
                line = marks[kind]
                assert int(line.attrs["data-step"]) == step
                assert float(line.attrs["x1"]) == pytest.approx(x_of(p, step), abs=0.11)
                assert line.attrs["x1"] == line.attrs["x2"]
        labels = {t.attrs["class"].split()[1]: t.all_text()
                  for t in svg.iter("text", "marker-label")}
        assert f"{check.onset_step:,}" in labels["onset"]
        assert f"first alert {check.shown_alert_step:,}" in labels["alert"]


def test_thresholds_of_each_rule_are_drawn(pages):
    result, page, _ = pages["kl-drift"]
    kl = panels(chart(page, "kl_drift"))[0]
    assert kl.attrs["data-metric"] == "kl"
    assert {0.5, 5.0, 10.0} <= set(thresholds(kl))
    labels = " ".join(t.all_text() for t in kl.iter("text", "threshold-label"))
    assert "drifting 0.5" in labels and "dangerous 5" in labels and "stop 10" in labels
    for value in (0.5, 5.0, 10.0):
        line = next(t for t in kl.iter("line", "threshold")
                    if float(t.attrs["data-value"]) == value)
        assert float(line.attrs["y1"]) == pytest.approx(y_of(kl, value), abs=0.11)

    result, page, _ = pages["entropy-collapse"]
    start = result.diagnosis.check("entropy_collapse").evidence["entropy_start"]
    ent = panels(chart(page, "entropy_collapse"))
    assert [p.attrs["data-metric"] for p in ent] == ["entropy", "reward_mean"]
    assert sorted(thresholds(ent[0])) == pytest.approx([0.1 * start, 0.5 * start], rel=1e-4)

    _, page, _ = pages["advantage-collapse"]
    zsf = panels(chart(page, "advantage_collapse"))[0]
    assert zsf.attrs["data-metric"] == "zero_std_fraction"
    assert sorted(thresholds(zsf)) == [0.5, 0.8]

    result, page, _ = pages["grad-explosion"]
    base = result.diagnosis.check("grad_explosion").evidence["baseline"]
    grad = panels(chart(page, "grad_explosion"))[0]
    assert grad.attrs["data-metric"] == "grad_norm" and grad.attrs["data-log"] == "1"
    assert 5 * base == pytest.approx(sorted(thresholds(grad))[1], rel=1e-4)
    spikes = [int(s.attrs["data-step"]) for s in grad.iter("path", "spike")]
    assert spikes and spikes[0] == result.diagnosis.check("grad_explosion").onset_step

    _, page, _ = pages["likelihood-displacement"]
    lld = [p.attrs["data-metric"] for p in panels(chart(page, "likelihood_displacement"))]
    assert lld == ["log_prob_mean", "grad_norm"]


def test_user_thresholds_are_the_ones_drawn():
    _, text = example("kl-drift", {"kl_drift": {"adapt_kl": 4.0, "stop_kl": 8.0}})
    kl = panels(chart(parse(text), "kl_drift"))[0]
    assert {0.5, 4.0, 8.0} <= set(thresholds(kl)) and 10.0 not in thresholds(kl)


def test_threshold_lines_come_from_the_rule_not_the_reporter(monkeypatch):
    """Rename kl_drift's stop_kl and its line: the reporter still draws it, at the renamed
    parameter's value and with the rule's label (it reads the rule's lines, knows no names)."""
    from dataclasses import replace

    from grpo_doctor import rules
    from grpo_doctor.rules.plot import ladder

    (result,) = api.diagnose_source(api.example_path("kl-drift"))
    kl_drift = rules.rule_named("kl_drift")
    params = tuple(replace(p, name="halt_kl") if p.name == "stop_kl" else p
                   for p in kl_drift.params)

    def lines(p, evidence):
        return {"kl": ladder([(p["halt_kl"], f"halt at {p['halt_kl']:g}", "critical")], True)}

    renamed = replace(kl_drift, params=params, lines=lines)
    monkeypatch.setattr(rules, "RULES", tuple(renamed if r.id == "kl_drift" else r
                                              for r in rules.RULES))
    text = render_html(result.diagnosis, result.run, {"kl_drift": {"halt_kl": 7.5}})
    kl = panels(chart(parse(text), "kl_drift"))[0]
    labels = " ".join(t.all_text() for t in kl.iter("text", "threshold-label"))
    assert thresholds(kl) == [7.5] and "halt at 7.5" in labels and "stop" not in labels


def test_numerical_failure_marks_the_nan_steps(pages):
    result, page, _ = pages["grad-explosion"]
    check = result.diagnosis.check("numerical_failure")
    first = panels(chart(page, "numerical_failure"))[0]
    nan = list(first.iter("rect", "nan"))
    assert nan and int(nan[0].attrs["data-step"]) == check.onset_step


def test_skipped_checks_listed_with_reasons(pages):
    result, page, _ = pages["kl-drift"]
    section = next(s for s in page.iter("section") if s.attrs.get("id") == "skipped")
    text = section.all_text()
    for check in result.diagnosis.checks:
        if check.status.value == "skipped":
            assert check.mode in text and (check.reason or check.summary) in text


def test_checks_table_has_every_check(pages):
    result, page, _ = pages["entropy-collapse"]
    (table,) = page.iter("table", "checks")
    rows = list(table.iter("tr"))[1:]
    assert len(rows) == len(result.diagnosis.checks)
    row = next(r for r in rows if "entropy_collapse" in r.all_text())
    check = result.diagnosis.check("entropy_collapse")
    cells = [c.all_text() for c in row.iter("td")]
    assert cells[1] == "critical" and cells[2] == f"{check.onset_step:,}"
    assert cells[3] == f"{check.first_alert_step:,}" and cells[4] == check.summary


@pytest.mark.parametrize("name", EXAMPLES)
def test_self_contained_no_external_urls(pages, name):
    _, page, text = pages[name]
    for node in page.iter():
        for attr in ("src", "href", "xlink:href", "action", "data"):
            value = node.attrs.get(attr, "").strip().lower()
            assert not value.startswith(("http:", "https:", "//", "javascript:")), (node.tag,
                                                                                     value)
        assert node.tag not in ("link", "img", "iframe", "object", "embed")
        if node.tag == "script":
            assert "src" not in node.attrs
    assert "http://" not in text and "https://" not in text
    assert "@import" not in text and "url(" not in text


def _hostile_run() -> Run:
    n = 120
    frame = pd.DataFrame({
        "step": np.arange(1, n + 1),
        "<img src=x onerror=alert(2)>": np.linspace(1.0, 0.02, n) + ar1(0, n, 0.01),
        "reward": 0.5 + ar1(1, n, 0.02),
    })
    return build_run(frame, name=HOSTILE, source=f"/tmp/{HOSTILE}.csv", format="csv",
                     column_map={"entropy": "<img src=x onerror=alert(2)>"})


def test_hostile_names_render_literally():
    run = _hostile_run()
    diagnosis = diagnose(run)
    assert diagnosis.findings, "the hostile run should have a finding to chart"
    text = render_html(diagnosis, run)
    page = parse(text)
    scripts = list(page.iter("script"))
    assert len(scripts) == len(diagnosis.findings) + 2  # chart data x (findings + 1), our JS
    assert all(s.attrs.get("type") == "application/json" for s in scripts[:-1])
    assert text.count("</script>") == len(scripts)
    assert not list(page.iter("img"))
    (h1,) = page.iter("h1")
    assert h1.all_text() == HOSTILE
    title = next(page.iter("title"))  # the head's, before any chart's
    assert HOSTILE in title.all_text()
    assert "logged as <img src=x onerror=alert(2)>" in page.all_text()
    assert "onerror=alert(2)>" not in text.replace("&lt;img src=x onerror=alert(2)&gt;", "")


def test_gaps_break_the_line_and_sparse_logging_does_not():
    n = 200
    entropy = np.linspace(1.0, 0.5, n)
    entropy[80:110] = np.nan  # not logged for 30 steps while reward was
    reward = np.linspace(0, 1, n)
    kl = np.full(n, np.nan)
    kl[::2] = np.linspace(0, 0.1, n // 2)  # logged every other step: one line
    run = make_run(entropy=entropy, reward=reward, kl=kl)
    text = render_html(diagnose(run), run)
    dash = next(s for s in parse(text).iter("svg") if s.attrs["id"] == "chart-dashboard")
    by_metric = {p.attrs["data-metric"]: p for p in panels(dash)}
    for cls in ("raw", "smooth"):
        (path,) = by_metric["entropy"].iter("path", cls)
        assert path.attrs["d"].count("M") == 2, "the line breaks across the gap"
        (path,) = by_metric["kl"].iter("path", cls)
        assert path.attrs["d"].count("M") == 1, "logging every other step is not a gap"
        (path,) = by_metric["reward_mean"].iter("path", cls)
        assert path.attrs["d"].count("M") == 1


@pytest.mark.parametrize("n", [40, 100, 400])
def test_one_raw_spike_does_not_flatten_the_drift_that_matters(n):
    """KL drifting 0.1 -> 1.2 next to one raw spike to 25: the axis keeps to the drift and the
    spike is drawn at its edge, marked, with its value."""
    from grpo_doctor.reporters.html import _Context, finding_chart, svg_chart, y_axis

    t = np.arange(n)
    kl = 0.1 + 1.1 * t / n + np.abs(ar1(1, n, 0.03))
    kl[n // 2] = 25.0
    run = make_run(train__kl=kl, train__reward=0.5 + ar1(2, n, 0.02))
    d = diagnose(run)
    chart = finding_chart(d.check("kl_drift"), run, _Context(d, None))
    axis = y_axis(chart.panels[0])
    assert axis.clipped and 1.2 < axis.hi < 2.0
    svg, _ = svg_chart(chart)
    spike = f'class="clipped" data-step="{n // 2 + 1}" data-value="25"'
    assert svg.count('class="clipped"') == 1 and spike in svg
    assert "25 at step" in svg and "beyond the axis" in svg


@pytest.mark.parametrize("at", [0.5, 0.95])
def test_png_labels_the_points_beyond_the_axis_as_the_html_does(at):
    """The PNG writes the value and step of the most extreme point above (and below) the axis
    beside its edge, as the HTML does, inside the picture: the spike the finding is about."""
    pytest.importorskip("matplotlib")
    from grpo_doctor.reporters.html import (
        _Context,
        beyond_axis_labels,
        finding_chart,
        png_figure,
        svg_chart,
        y_axis,
    )

    n = 200
    t = np.arange(n)
    kl = 0.1 + 1.1 * t / n + np.abs(ar1(1, n, 0.03))
    spike, dip = int(n * at), n // 4
    kl[spike], kl[spike - 3], kl[dip] = 25.0, 19.0, -30.0
    run = make_run(train__kl=kl, train__reward=0.5 + ar1(2, n, 0.02))
    d = diagnose(run)
    chart = finding_chart(d.check("kl_drift"), run, _Context(d, None))
    labels = [text for _, _, text in beyond_axis_labels(chart.panels[0],
                                                        y_axis(chart.panels[0]))]
    assert labels == [f"25 at step {spike + 1}", f"-30 at step {dip + 1}"]
    svg, _ = svg_chart(chart)
    assert all(label in svg for label in labels)
    fig = png_figure(chart, "kl_drift")
    fig.canvas.draw()
    drawn = [t for ax in fig.axes for t in ax.texts if t.get_gid() == "beyond-axis-label"]
    assert [t.get_text() for t in drawn] == labels
    box = fig.bbox
    for text in drawn:
        extent = text.get_window_extent()
        assert box.x0 <= extent.x0 and extent.x1 <= box.x1, text.get_text()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's overflow, as the CLI does
def test_an_outlier_near_the_float_limit_is_labelled_short_and_fits():
    """1.7e308 is written as such (not 309 digits), and the PNG lays out without warning."""
    pytest.importorskip("matplotlib")
    import warnings

    from grpo_doctor.reporters.html import (
        _Context,
        beyond_axis_labels,
        finding_chart,
        png_figure,
        svg_chart,
        y_axis,
    )

    grad = np.where(np.arange(200) < 100, 1.0 + 0.01 * (np.arange(200) % 3), 1.7e308)
    run = make_run(grad_norm=grad, reward=np.linspace(0.1, 0.3, 200))
    d = diagnose(run)
    chart = finding_chart(d.check("grad_explosion"), run, _Context(d, None))
    panel = chart.panels[0]
    assert [t for _, _, t in beyond_axis_labels(panel, y_axis(panel))] == [
        "1.7e308 at step 101"]
    assert "1.7e308 at step 101" in svg_chart(chart)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("error", UserWarning)  # e.g. constrained layout collapsing
        png_figure(chart, "grad_explosion").savefig(io.BytesIO(), format="png")


def test_a_curve_without_outliers_keeps_its_whole_range():
    from grpo_doctor.reporters.html import Panel, metric_series, y_axis

    n = 300
    run = make_run(train__kl=np.linspace(0.0, 8.0, n) + np.abs(ar1(3, n, 0.05)))
    panel = Panel("kl", metric_series(run, "kl"), "#000")
    axis = y_axis(panel)
    assert not axis.clipped and axis.lo <= 0.05 and axis.hi >= 8.0


def test_long_series_downsampled_with_spikes_kept():
    n = 100_000
    grad = 0.4 + np.abs(ar1(3, n, 0.01))
    grad[61_234] = 40.0
    run = make_run(grad_norm=grad, reward=np.linspace(0, 1, n))
    text = render_html(diagnose(run), run)
    dash = next(s for s in parse(text).iter("svg") if s.attrs["id"] == "chart-dashboard")
    grad_panel = next(p for p in panels(dash) if p.attrs["data-metric"] == "grad_norm")
    (raw,) = grad_panel.iter("path", "raw")
    points = re.findall(r"[ML](-?[\d.]+),(-?[\d.]+)", raw.attrs["d"])
    assert 1000 <= len(points) <= 1600
    top = min(float(y) for _, y in points)
    assert top == pytest.approx(y_of(grad_panel, 40.0), abs=0.2), "the spike is still drawn"
    assert len(text) < 2_000_000


def test_envelope_keeps_extremes_and_respects_segments():
    values = np.sin(np.arange(10_000) / 50.0)
    values[1234], values[8000] = 9.0, -9.0
    segment = (np.arange(10_000) >= 5000).astype(np.int64)
    idx = envelope(values, segment, 500)
    assert len(idx) <= 510 and 1234 in idx and 8000 in idx
    assert np.all(np.diff(idx) > 0)
    assert 4999 in idx or 5000 in idx or segment[idx].tolist().count(0) > 0


def test_index_page():
    (result,) = api.diagnose_source(api.example_path("kl-drift"))
    entries = [
        IndexEntry(name="healthy-run", status="healthy", href="runs/healthy run.html"),
        index_entry(result.diagnosis, "runs/kl-drift.html"),
        {"name": HOSTILE, "status": "warning", "href": "javascript:alert(1)"},
    ]
    text = render_index(entries)
    page = parse(text)
    rows = next(page.iter("tbody")).children
    names = [r.children[0].all_text() for r in rows]
    assert names == ["kl-drift", HOSTILE, "healthy-run"], "worst first"
    links = [a.attrs["href"] for a in page.iter("a")]
    assert "runs/healthy%20run.html" in links and "runs/kl-drift.html" in links
    assert all(":" not in href for href in links), "no link can carry a scheme"
    onset = result.diagnosis.check("kl_drift").onset_step
    assert f"kl_drift (critical) from step {onset:,}" in rows[0].all_text()
    assert "<script>alert" not in text


# --- the command line ----------------------------------------------------------------------



def test_cli_html_written_and_never_overwritten_without_force(capsys, tmp_path):
    target = tmp_path / "report.html"
    code, out, err = run_cli(capsys, "diagnose", "--example", "kl-drift", "--html",
                             str(target), "--format", "json")
    assert code == 1 and err == "" and out.startswith("{")
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    target.write_text("mine")
    code, _, err = run_cli(capsys, "diagnose", "--example", "kl-drift", "--html", str(target))
    assert code == 2 and err.count("\n") == 1 and "--force" in err
    assert target.read_text() == "mine"
    code, _, _ = run_cli(capsys, "diagnose", "--example", "kl-drift", "--html", str(target),
                         "--force")
    assert code == 1 and "kl_drift" in target.read_text(encoding="utf-8")


def test_cli_png_without_matplotlib_is_one_clear_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    code, out, err = run_cli(capsys, "diagnose", "--example", "kl-drift", "--png",
                             str(tmp_path / "png"))
    assert code == 2 and out == ""
    assert err == ("grpo-doctor: error: --png needs matplotlib: install the plot extra (from a "
                   "clone: pip install '.[plot]')\n")
    assert not (tmp_path / "png").exists()


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_cli_png_one_per_finding_or_a_dashboard(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    out_dir = tmp_path / "png"
    code, _, _ = run_cli(capsys, "diagnose", "--example", "entropy-collapse", "--png",
                         str(out_dir))
    assert code == 1
    assert sorted(p.name for p in out_dir.iterdir()) == ["advantage_collapse.png",
                                                         "entropy_collapse.png"]
    assert all(_png_size(p)[0] >= 800 for p in out_dir.iterdir())
    code, _, err = run_cli(capsys, "diagnose", "--example", "entropy-collapse", "--png",
                           str(out_dir))
    assert code == 2 and "--force" in err
    healthy = tmp_path / "healthy"
    assert run_cli(capsys, "diagnose", "--example", "healthy", "--png", str(healthy))[0] == 0
    assert [p.name for p in healthy.iterdir()] == ["dashboard.png"]


def test_help_does_not_import_the_report_modules():
    code = ("import sys, grpo_doctor.cli; "
            "print(any(m in sys.modules for m in ('grpo_doctor.reporters.html', 'matplotlib', "
            "'numpy', 'pandas')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


# --- a real browser ------------------------------------------------------------------------

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)),
                None)
BROWSER_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars",
    # Nothing can be fetched: a page that needed the network would log a failed load.
    "--host-resolver-rules=MAP * ~NOTFOUND",
]


@pytest.fixture
def browser(tmp_path):
    if CHROMIUM is None:
        if os.environ.get("GRPO_DOCTOR_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is required (GRPO_DOCTOR_REQUIRE_BROWSER=1) but not installed")
        pytest.skip("chromium not installed")

    def run(page: Path, *extra: str) -> subprocess.CompletedProcess[str]:
        profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
        return subprocess.run(
            [CHROMIUM, *BROWSER_FLAGS, f"--user-data-dir={profile}", *extra,
             page.resolve().as_uri()],
            capture_output=True, text=True, timeout=180, check=False)

    return run


def load(browser, page: Path) -> tuple[str, list[str]]:
    """The DOM after load and every console message the page produced."""
    done = browser(page, "--enable-logging=stderr", "--v=0", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


def ready(dom: str) -> bool:
    body = re.search(r"<body[^>]*>", dom)
    return body is not None and 'data-ready="1"' in body.group(0)


@pytest.mark.slow  # a real browser
@pytest.mark.parametrize("name", EXAMPLES)
def test_browser_loads_every_example_without_errors(browser, tmp_path, name):
    result, text = example(name)
    page = tmp_path / f"{name}.html"
    page.write_text(text, encoding="utf-8")
    dom, console = load(browser, page)
    assert console == []
    assert ready(dom), "the inline script did not run to its end"
    assert dom.count("<svg") == len(result.diagnosis.findings) + 1
    shot = tmp_path / f"{name}.png"
    done = browser(page, f"--screenshot={shot}", "--window-size=1400,2400")
    assert done.returncode == 0 and shot.exists()
    assert _png_size(shot) == (1400, 2400)
    assert shot.stat().st_size > 50_000, "a blank page compresses to almost nothing"


@pytest.mark.slow  # a real browser
def test_browser_check_fails_on_a_script_error(browser, tmp_path):
    _, text = example("healthy")
    broken = text.replace("document.body.setAttribute('data-ready'",
                          "document.bodyy.setAttribute('data-ready'")
    assert broken != text
    page = tmp_path / "broken.html"
    page.write_text(broken, encoding="utf-8")
    dom, console = load(browser, page)
    assert not ready(dom)
    assert any("Uncaught" in line for line in console)


@pytest.mark.slow  # a real browser
def test_browser_tooltip_reads_the_point_under_the_pointer(browser, tmp_path):
    result, text = example("entropy-collapse")
    probe = (
        "<script>(function () {"
        "var r = document.querySelector('#chart-entropy_collapse rect.hit');"
        "var b = r.getBoundingClientRect();"
        "r.dispatchEvent(new MouseEvent('mousemove', {clientX: b.left + b.width / 2,"
        " clientY: b.top + b.height / 2, bubbles: true}));"
        "document.body.setAttribute('data-tip', document.getElementById('tip').textContent);"
        "document.body.setAttribute('data-hair', r.parentNode.querySelector('line.hair')"
        ".getAttribute('visibility'));"
        "})();</script></body>")
    page = tmp_path / "probe.html"
    page.write_text(text.replace("</body>", probe), encoding="utf-8")
    dom, console = load(browser, page)
    assert console == [] and ready(dom)
    tip = re.search(r'data-tip="([^"]*)"', dom)
    assert tip is not None, "the tooltip script did not run"
    step = int(re.match(r"step ([\d,]+)", tip.group(1)).group(1).replace(",", ""))
    first, last = result.run.first_step, result.run.last_step
    assert abs(step - (first + last) / 2) <= 2, tip.group(1)
    assert "entropy" in tip.group(1) and "median" in tip.group(1)
    assert 'data-hair="visible"' in dom


@pytest.mark.slow  # a real browser
def test_browser_renders_hostile_names_as_text(browser, tmp_path):
    run = _hostile_run()
    page = tmp_path / "hostile.html"
    page.write_text(render_html(diagnose(run), run), encoding="utf-8")
    dom, console = load(browser, page)
    assert console == [] and ready(dom)
    assert "<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>" in dom
    assert "<img" not in dom


@pytest.mark.skipif(not (REAL_RUNS / "notebook-tables").is_dir(),
                    reason="shared real runs not present")
@pytest.mark.slow  # a real browser
def test_browser_loads_a_real_run(browser, tmp_path):
    source = next(iter(sorted((REAL_RUNS / "notebook-tables").glob("Qwen3_VL_*.csv"))))
    (result,) = api.diagnose_source(source)
    page = tmp_path / "real.html"
    page.write_text(render_html(result.diagnosis, result.run), encoding="utf-8")
    dom, console = load(browser, page)
    assert console == [] and ready(dom)
    assert "advantage_collapse" in dom


def test_a_blowup_chart_draws_the_blowup_line_not_the_collapse_lines():
    """Entropy charts drew the first rule's lines on entropy (entropy_collapse's '% of start')
    whatever the finding; a blow-up's lines come from its baseline."""
    result = api.diagnose_source(REPO / "tests/fixtures/corpus/22_entropy_bonus_0.5")[0]
    assert result.diagnosis.check("entropy_blowup").fired
    assert not result.diagnosis.check("entropy_collapse").fired
    page = render_html(result.diagnosis, result.run)
    base = result.diagnosis.check("entropy_blowup").evidence["entropy_baseline"]
    assert "blow-up (" in page and f"baseline {fmt(base)} x1.5" in page
    assert "of start (" not in page
