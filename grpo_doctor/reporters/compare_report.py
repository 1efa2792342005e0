"""Reports of a comparison of runs (``grpo-doctor compare``): text, JSON, Markdown and HTML.

Every format renders from ``Comparison.to_dict()``-level data; the HTML page reuses the
diagnosis report's chart machinery (``reporters/html/``) with the runs' curves overlaid and
each parting step marked. Runs are lettered A (the reference), B, C ... so lines stay short.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable, Sequence
from typing import Any

from grpo_doctor.comparison import Comparison, MetricComparison
from grpo_doctor.escape import json_dumps, terminal
from grpo_doctor.escape import markdown as md
from grpo_doctor.reporters.fit import (
    both_ends,
    fit_words,
    key_labels,
    pack,
    run_labels,
    shorten_left,
)
from grpo_doctor.reporters.json_report import _clean
from grpo_doctor.store import Run
from grpo_doctor.text import fmt, fmt_apart

#: Config keys listed by name before the rest are counted.
MAX_KEYS = 12


def letter(i: int) -> str:
    return string.ascii_uppercase[i] if i < 26 else f"R{i + 1}"


#: A config value longer than this is shortened in the Markdown and HTML tables.
MAX_VALUE = 60


def _value(v: Any, digits: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v
    return fmt(v, digits)


def values_text(values: Sequence[Any], room: int | None = None,
                escape: Callable[[str], str] = str) -> list[str]:
    """Each run's value of one config key as text, different values told apart: numbers
    with as many digits as that takes (9.79e-05 and 0.0001, not 0.0001 twice); with a
    ``room``, in at most that many characters, text shortened in the middle (its start and
    end kept). ``escape`` makes each safe for where it is shown, before it is measured."""
    distinct = len({repr(v) for v in values})
    for digits in range(3, 18):
        texts = [_value(v, digits) for v in values]
        if len(set(texts)) == distinct:
            break
    else:
        texts = [repr(v) if isinstance(v, float) else _value(v) for v in values]
    texts = [escape(text) for text in texts]
    return texts if room is None else both_ends(texts, room)


def partings(comparison: Comparison) -> list[tuple[int, str, int, MetricComparison]]:
    """(step, metric, run index, metric comparison) of every parting, earliest first."""
    out = []
    for metric, m in comparison.metrics.items():
        for i, p in enumerate(m.partings):
            if p is not None:
                out.append((p.step, metric, i, m))
    return sorted(out, key=lambda t: (t[0], t[2], t[1]))


def parting_line(comparison: Comparison, metric: str, i: int) -> str:
    """'B parts from A at step 7 on reward_mean: A 0.663, B 0.757' (the levels: each run's
    mean over the first window where the gap is significant), each named, in the config
    diff's order: "0.663 vs 0.757" after "B parts from A" read as B's first (helper-39)."""
    p = comparison.metrics[metric].partings[i]
    assert p is not None
    level_a, level_b = fmt_apart(p.level_a, p.level_b)
    return f"{letter(i)} parts from A at step {p.step:,} on {metric}: A {level_a}, " \
        f"{letter(i)} {level_b}"


def not_compared(comparison: Comparison) -> list[tuple[int, list[str], int]]:
    """Per run other than the reference, the metrics both it and the reference logged that
    were never tested (they share too few steps: ``MIN_POINTS``), with the most points any
    of them share: (run index, metrics, shared points); runs with none are left out."""
    out = []
    for i in range(1, len(comparison.runs)):
        metrics, most = [], 0
        for metric, m in comparison.metrics.items():
            if m.logged[0] and m.logged[i] and not m.compared[i]:
                metrics.append(metric)
                most = max(most, (m.shared[i] if m.shared else None) or 0)
        if metrics:
            out.append((i, metrics, most))
    return out


def compared_any(comparison: Comparison) -> bool:
    """Whether any metric was tested at all (for any run against the reference)."""
    return any(any(m.compared[1:]) for m in comparison.metrics.values())


def not_compared_lines(comparison: Comparison) -> list[str]:
    """What was not compared, one sentence a run: 'B shares no logged steps with A: not
    compared'; 'B shares 5 logged steps with A on kl, entropy (12 needed): not compared'."""
    from grpo_doctor.trends.divergence import MIN_POINTS

    lines = []
    for i, metrics, most in not_compared(comparison):
        whole = all(not comparison.metrics[m].compared[i] for m in comparison.metrics
                    if comparison.metrics[m].logged[0] and comparison.metrics[m].logged[i])
        shares = ("shares no logged steps with A" if most == 0 else
                  f"shares at most {most:,} logged steps with A ({MIN_POINTS} needed)")
        what = "" if whole else f" on {', '.join(metrics)}"
        lines.append(f"{letter(i)} {shares}{what}: not compared")
    return lines


def no_parting_text(comparison: Comparison) -> str:
    """What 'Where they part' says when no metric parts: that the runs agree only when some
    metric was compared; otherwise that nothing was."""
    if compared_any(comparison):
        where = " where compared" if not_compared(comparison) else ""
        return f"no metric parts{where}: the runs agree within their noise"
    if not comparison.metrics:
        return "not compared: the runs log no metric in common"
    if all(not n for m in comparison.metrics.values() for n in (m.shared or ())[1:]):
        return "not compared: the runs share no logged steps"
    return "not compared: the runs share too few logged steps to test"


def _finding_cell(comparison: Comparison, mode: str, i: int) -> str:
    f = comparison.findings[mode]
    status = f.statuses[i] or "–"
    onset = f.onsets[i]
    cell = status + (f"@{onset:,}" if onset is not None and status in ("warning", "critical")
                     else "")
    change = f.changes[i]
    return cell + (f" ({change.replace('_', ' ')})" if change and change != "same" else "")


def _root_cause(rc: Any) -> str | None:
    if rc is None:
        return None
    data = rc.to_dict() if hasattr(rc, "to_dict") else rc
    if isinstance(data, dict):
        head = str(data.get("mode") or "")
        if isinstance(event := data.get("cause"), str) and event and event != head:
            head = f"{event} (seen as {head})"  # as diagnose names it
        step = data.get("step")
        text = data.get("summary") or ""
        return f"{head}{f' at step {step:,}' if isinstance(step, int) else ''}: {text}".strip(
            ": ")
    return str(data)


# --- text (terminal) -------------------------------------------------------------------------

#: A run's name gets its own line below this much room beside the run's facts.
MIN_NAME_ROOM = 16


def _run_head(i: int, run: dict[str, Any]) -> str:
    """A run's letter, status, format and steps, in columns (its name follows)."""
    steps = f"steps {run['first_step'] or 0:,}–{run['last_step'] or 0:,}"
    return f"  {letter(i)}  {run['status']:<8} {run['format']:<13} {steps:<17} "


def _report(comparison: Comparison, width: int) -> list[Any]:
    """The terminal report as rich renderables for ``width`` columns: every line fits, names
    and config keys are shortened so that they stay told apart, lists and root causes wrap
    between words, cells (``B critical@45 (escalates)``) stay whole, a path too long for its
    line keeps its end (the file name)."""
    from rich.text import Text

    from grpo_doctor.reporters.terminal import _hang

    def hang(head: str, body: str) -> Any:
        """``body`` after ``head``, wrapped between words under its first one."""
        return _hang(head, fit_words(terminal(body), max(1, width - len(head))), head_style="")

    def cells(head: str, items: Sequence[str], sep: str = "  ") -> Any:
        """``items`` (escaped) after ``head``, as many on a line as fit, none broken."""
        return _hang(head, "\n".join(pack(items, max(1, width - len(head)), sep)),
                     head_style="")

    runs = comparison.runs
    out: list[Any] = [Text(f"grpo-doctor compare: {len(runs)} runs; A is the reference"),
                      Text("")]
    heads = [_run_head(i, r) for i, r in enumerate(runs)]
    room = width - max(len(h) for h in heads)
    names = [terminal(r["name"]) for r in runs]
    # A name that would be cut beside the facts gets a line of its own, where more of it fits.
    own_line = room < MIN_NAME_ROOM or max(len(n) for n in names) > room
    labels = run_labels(names, width - 5 if own_line else room)
    previous = None
    for head, label, r in zip(heads, labels, runs):
        if own_line and len(head.rstrip()) > width:  # its facts wrap, steps kept whole
            facts = [w if len(w) <= width - 5 else w.replace("–", "– ")
                     for w in head[5:].split()]  # a range too long for a line: at its dash
            out += [hang(head[:5], " ".join(facts)),
                    Text(f"     {label}")]
        elif own_line:
            out += [Text(head.rstrip()), Text(f"     {label}")]
        else:
            out.append(Text(head + label))
        source = str(r["source"])
        if source != previous:  # runs of one file: its path once, on its own line
            out.append(Text("     " + shorten_left(terminal(source), width - 5)))
        previous = source
    out += [hang("  note: ", note) for note in comparison.notes]
    out += [Text(""), Text("Config diff")]
    out += _config_diff(comparison, width, hang, cells)
    out += [Text(""), Text("Where they part (first step beyond the runs' own noise)")]
    found = partings(comparison)
    for _, metric, i, _ in found:
        who, _, said = terminal(parting_line(comparison, metric, i)).partition(" ")
        words, _, levels = said.rpartition(": ")  # "0.663 vs 0.757" stays on one line
        out.append(cells(f"  {who} ", [*f"{words}:".split(" "), levels], sep=" "))
    if not found:
        out.append(hang("  ", no_parting_text(comparison)))
    steady = [m for m, c in comparison.metrics.items() if c.diverges_at is None
              and any(c.compared[1:])]
    if steady and found:
        out.append(hang("  no parting on: ", ", ".join(steady)))
    if compared_any(comparison) or len(comparison.runs) > 2:
        out += [hang("  ", line) for line in not_compared_lines(comparison)]
    not_compared = [m for m, c in comparison.metrics.items() if not all(c.logged)]
    if not_compared:
        out.append(hang("  not logged by every run: ", ", ".join(not_compared)))
    out += [Text(""), Text("Findings")]
    if not comparison.findings:
        out.append(Text("  no failure mode in any run"))
    mode_w = max((len(terminal(m)) for m in comparison.findings), default=0)
    for mode in comparison.findings:
        row = [f"{letter(i)} {_finding_cell(comparison, mode, i)}" for i in range(len(runs))]
        if mode_w + 4 + max(len(c) for c in row) <= width:
            out.append(cells(f"  {terminal(mode):<{mode_w}}  ", row))
            continue
        # Too narrow for the cells beside the modes: the mode on its line, its cells under it,
        # each whole on a line when it fits, else wrapped between its words (never inside
        # ``critical@145``).
        out.append(Text(f"  {terminal(mode)}"))
        if max(len(c) for c in row) <= width - 4:
            out.append(cells("    ", row))
        else:
            out += [cells("    ", cell.split(" "), sep=" ") for cell in row]
    causes = [(i, _root_cause(rc)) for i, rc in enumerate(comparison.root_causes)]
    if any(text for _, text in causes):
        out += [Text(""), Text("Root cause")]
        out += [hang(f"  {letter(i)} ", text) for i, text in causes if text]
    for i, line in _advice_lines(comparison):
        out.append(hang(f"  {letter(i)} ", line))
    return out


def _advice_lines(comparison: Comparison) -> list[tuple[int, str]]:
    """Per run: what to do first, then the settings that differ from the reference's and can
    explain what it has and the reference has not."""
    out: list[tuple[int, str]] = []
    for i, action in enumerate(comparison.first_actions):
        if action:
            out.append((i, f"do this first: {action}"))
        found = comparison.suspects[i] if i < len(comparison.suspects) else ()
        if found:
            out.append((i, "differs from the reference and can explain it: " + "; ".join(
                f"{x.setting} {_value(x.values[0])} -> {_value(x.values[1])} ({x.direction}: "
                f"a known {'cause of' if x.primary else 'contributor to'} {', '.join(x.modes)})"
                for x in found)))
    return out



def _no_config_diff(comparison: Comparison) -> str:
    """What the config diff says when it is empty: no config read is not no difference."""
    runs = comparison.runs
    without = [letter(i) for i, r in enumerate(runs) if not r.get("config_keys", 1)]
    if len(without) == len(runs):
        # (the logged lr is no config: 'nothing to compare' beside 'the reference ran
        # healthy at learning_rate 1e-4 too' read as a contradiction; nu33)
        return ("no config in any run's log (settings the logs record, such as the learning "
                "rate, are compared as curves below)")
    return "no difference in the configs read" + (
        f" (none in run {', '.join(without)})" if without else "")


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "."


def _config_diff(comparison: Comparison, width: int, hang: Any, cells: Any) -> list[Any]:
    """The config diff's lines: the keys every run has, each with its runs' values (keys and
    values shortened where they must be, told apart), then the rest by name."""
    from rich.text import Text

    runs = comparison.runs
    diff = comparison.config_diff
    out: list[Any] = []
    everywhere = [k for k, v in diff.items() if all(x is not None for x in v)
                  or k in comparison.config_origin]
    partial = [k for k in diff if k not in everywhere]
    if not diff:
        out.append(hang("  ", _no_config_diff(comparison)))
    shown = everywhere[:MAX_KEYS]
    keys = [terminal(k) for k in shown]
    tag_w = max(len(letter(i)) for i in range(len(runs))) + 1  # "A "

    whole = {key: values_text(diff[key], escape=terminal) for key in shown}
    # Keys whole when every row then fits on its line, else in at most 2/5 of the width.
    longest = max((len(k) for k in keys), default=0)
    key_w = longest if all(4 + longest + sum(tag_w + len(t) + 2 for t in texts) - 2 <= width
                           for texts in whole.values()) else min(longest,
                                                                 max(12, width * 2 // 5))
    value_room = max(4, width - key_w - 4 - tag_w)
    for key, label in zip(shown, key_labels(keys, key_w)):
        texts = both_ends(whole[key], value_room)
        out.append(cells(f"  {label:<{key_w}}  ",
                         [f"{letter(i)} {text}" for i, text in enumerate(texts)]))
        origin = comparison.config_origin.get(key)
        if origin and any(o and o.startswith("logged") for o in origin):
            by_origin: dict[str, list[str]] = {}
            for i, o in enumerate(origin):
                if o and o.startswith("logged"):
                    by_origin.setdefault(o, []).append(letter(i))
            where = [f"{', '.join(who)}: {o}" for o, who in by_origin.items()]
            out.append(hang(" " * (key_w + 4), f"({'; '.join(where)})"))
    more = everywhere[MAX_KEYS:]
    if more:
        what = "key differs" if len(more) == 1 else "keys differ"
        out.append(hang("  ", f"{len(more)} more {what}: {', '.join(more)}"))
    if partial:
        # Apart from those that differ: a key one tracker logs and another does not (the
        # model's config in a wandb run, none in TensorBoard's) is no difference between the
        # runs (63 model keys had read as differing, the real differences among them; trial 82).
        what = ("key is in only some runs' configs" if len(partial) == 1 else
                "keys are in only some runs' configs")
        named = ", ".join(partial[:_PARTIAL_NAMED]) + (
            f" and {len(partial) - _PARTIAL_NAMED} more" if len(partial) > _PARTIAL_NAMED else "")
        out.append(hang("  ", f"{len(partial)} {what} (a tracker that logs more, or a "
                              f"setting only some set): {named}"))
    if more or partial:
        out.append(Text("  (--format json lists every value)"))
    return out


#: Keys in only some runs' configs named in the text (the JSON lists them all).
_PARTIAL_NAMED = 12


def render_compare_text(comparison: Comparison, width: int = 80) -> str:
    """The terminal report as text ``width`` columns wide: runs, config diff, where they part,
    findings, root causes (for ``--output``, tests and logs)."""
    from rich.console import Group

    from grpo_doctor.reporters.terminal import as_text

    return as_text(Group(*_report(comparison, width)), width)


def render_compare_terminal(comparison: Comparison, console: Any = None) -> None:
    """The terminal report on ``console`` (stdout by default), as wide as it is."""
    from rich.console import Console, Group

    console = console or Console(highlight=False)
    console.print(Group(*_report(comparison, console.width)), highlight=False)


# --- JSON ------------------------------------------------------------------------------------


def render_compare_json(comparison: Comparison) -> str:
    return json_dumps(_clean(comparison.to_dict()), indent=2, allow_nan=False) + "\n"


# --- Markdown --------------------------------------------------------------------------------


def render_compare_markdown(comparison: Comparison) -> str:
    runs = comparison.runs
    lines = ["## grpo-doctor compare", "", "| run | name | status | format | steps |",
             "|---|---|---|---|---|"]
    for i, r in enumerate(runs):
        ref = " (reference)" if i == 0 else ""
        lines.append(f"| {letter(i)}{ref} | {md(r['name'])} | {r['status']} | "
                     f"{md(r['format'])} | {r['first_step'] or 0:,}–{r['last_step'] or 0:,} |")
    lines += [f"\n> note: {md(note)}" for note in comparison.notes]
    lines += ["", "### Config diff", ""]
    if comparison.config_diff:
        lines += ["| key | " + " | ".join(letter(i) for i in range(len(runs))) + " |",
                  "|---|" + "---|" * len(runs)]
        for key, values in comparison.config_diff.items():
            lines.append(f"| {md(key)} | " + " | ".join(
                md(text) for text in values_text(values, MAX_VALUE)) + " |")
    else:
        lines.append(_sentence(_no_config_diff(comparison)))
    lines += ["", "### Where they part", ""]
    found = partings(comparison)
    lines += [f"- {md(parting_line(comparison, metric, i))}" for _, metric, i, _ in found]
    if not found:
        lines.append(_sentence(no_parting_text(comparison)))
    if compared_any(comparison) or len(runs) > 2:
        lines += [f"- {md(line)}" for line in not_compared_lines(comparison)]
    lines += ["", "### Findings", ""]
    if comparison.findings:
        lines += ["| mode | " + " | ".join(letter(i) for i in range(len(runs))) + " |",
                  "|---|" + "---|" * len(runs)]
        for mode in comparison.findings:
            lines.append(f"| {md(mode)} | " + " | ".join(
                md(_finding_cell(comparison, mode, i)) for i in range(len(runs))) + " |")
    else:
        lines.append("No failure mode in any run.")
    causes = [(i, _root_cause(rc)) for i, rc in enumerate(comparison.root_causes)]
    if any(text for _, text in causes):
        lines += ["", "### Root cause", ""]
        lines += [f"- {letter(i)}: {md(text)}" for i, text in causes if text]
    lines += [f"- {letter(i)}: {md(line)}" for i, line in _advice_lines(comparison)]
    return "\n".join(lines) + "\n"


# --- HTML ------------------------------------------------------------------------------------

#: Drawn even when they do not part (those logged), after the metrics that part.
_MAIN = ("reward_mean", "entropy", "kl", "zero_std_fraction", "grad_norm",
         "response_length_mean", "log_prob_mean")


def compare_chart(comparison: Comparison, runs: Sequence[Run], metric: str):
    """One chart: ``metric`` of every run overlaid, each parting step marked."""
    from grpo_doctor.reporters import html as h

    m = comparison.metrics[metric]
    series = [h.metric_series(run, metric) for run in runs]
    colors = [h.SERIES_COLORS[i % len(h.SERIES_COLORS)] for i in range(len(runs))]
    names = [f"{letter(i)} {runs[i].name}" for i in range(len(runs))]
    base = series[0]
    assert base is not None, "drawn only for metrics the reference logged"
    overlays = tuple((s, c) for s, c in zip(series[1:], colors[1:]) if s is not None)
    labels = tuple(n for s, n in zip(series[1:], names[1:]) if s is not None)
    markers = tuple(h.Marker(p.step, "onset", f"{letter(i)} parts at {p.step:,}")
                    for i, p in enumerate(m.partings) if p is not None)
    panel = h.Panel(title=h.LABELS.get(metric, metric), series=base, color=colors[0],
                    note="first run is the reference", markers=markers,
                    marker_color=h.STATUS_COLOR["critical"], fit_thresholds=False,
                    overlays=overlays, series_label=names[0], overlay_labels=labels)
    lo = min(float(s.steps[0]) for s in series if s is not None)
    hi = max(float(s.steps[-1]) for s in series if s is not None)
    status = "critical" if m.diverges_at is not None else "ok"
    return h.Chart(id=f"chart-{h._slug(metric)}", title=metric, status=status,
                   panels=(panel,), steps=(lo, hi))


def render_compare_html(comparison: Comparison, runs: Sequence[Run]) -> str:
    """One self-contained page: the comparison's tables and, per metric that parts (the main
    metrics first), then per main metric that does not, the runs' curves overlaid with the
    parting steps marked."""
    from grpo_doctor.reporters import html as h
    from grpo_doctor.version import package_version

    esc = h.esc
    rows = "".join(
        f"<tr><td><b>{letter(i)}</b></td><td>{esc(r['name'])}</td><td>{h._badge(r['status'])}"
        f"</td><td>{esc(r['format'])}</td><td class=\"num\">{h._step(r['first_step'])}–"
        f"{h._step(r['last_step'])}</td><td class=\"muted\">{esc(r['source'])}</td></tr>"
        for i, r in enumerate(comparison.runs))
    body = [f'<header class="card top" style="--st:#1f5fae"><h1>grpo-doctor compare</h1>'
            f'<p class="meta">{len(runs)} runs; A is the reference</p><table><thead><tr>'
            f'<th>run</th><th>name</th><th>status</th><th>format</th><th>steps</th>'
            f'<th>source</th></tr></thead><tbody>{rows}</tbody></table>'
            + "".join(f'<p class="muted">note: {esc(note)}</p>' for note in comparison.notes)
            + '</header>']
    diff_rows = "".join(
        f"<tr><td>{esc(k)}</td>" + "".join(f"<td>{esc(text)}</td>"
                                           for text in values_text(values, MAX_VALUE))
        + "</tr>" for k, values in comparison.config_diff.items())
    heads = "".join(f"<th>{letter(i)}</th>" for i in range(len(runs)))
    body.append('<section class="card" id="config"><h2>Config diff</h2>' + (
        f'<table><thead><tr><th>key</th>{heads}</tr></thead><tbody>{diff_rows}</tbody></table>'
        if diff_rows else f'<p class="muted">{esc(_sentence(_no_config_diff(comparison)))}</p>')
        + "</section>")
    found = partings(comparison)
    items = "".join(f"<li>{esc(parting_line(comparison, metric, i))}</li>"
                    for _, metric, i, _ in found)
    unmatched = "".join(f"<li>{esc(line)}</li>" for line in not_compared_lines(comparison)) \
        if compared_any(comparison) or len(runs) > 2 else ""
    body.append('<section class="card" id="partings"><h2>Where they part</h2>' + (
        f'<ul class="plain">{items}</ul>' if items else
        f'<p class="muted">{esc(_sentence(no_parting_text(comparison)))}</p>')
        + (f'<ul class="plain">{unmatched}</ul>' if unmatched else "") + "</section>")
    if comparison.findings:
        f_rows = "".join(
            f"<tr><td>{esc(mode)}</td>" + "".join(
                f"<td>{esc(_finding_cell(comparison, mode, i))}</td>" for i in range(len(runs)))
            + "</tr>" for mode in comparison.findings)
        body.append(f'<section class="card" id="findings"><h2>Findings</h2><table><thead><tr>'
                    f'<th>mode</th>{heads}</tr></thead><tbody>{f_rows}</tbody></table></section>')
    parted = list(dict.fromkeys(metric for _, metric, _, _ in found))
    main = [m for m in _MAIN if m in comparison.metrics]
    shown = ([m for m in main if m in parted] + [m for m in parted if m not in main]
             + [m for m in main if m not in parted])
    scripts = []
    for metric in shown:
        if all(h.metric_series(run, metric) is None for run in runs[:1]):
            continue
        chart = compare_chart(comparison, runs, metric)
        svg, data = h.svg_chart(chart)
        scripts.append(h._json_script(f"{chart.id}-data", data))
        m = comparison.metrics[metric]
        note = (f"parts at step {m.diverges_at:,}" if m.diverges_at is not None
                else "no parting")
        body.append(f'<section class="card" id="metric-{h._slug(metric)}"><h2>{esc(metric)} '
                    f'<span class="muted">({note})</span></h2>{svg}</section>')
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>grpo-doctor compare</title><style>{h._CSS}</style></head>\n"
        f'<body data-ready="0"><main>' + "\n".join(body)
        + f'<footer>grpo-doctor {esc(package_version())} · compare schema 1</footer></main>'
        '<div id="tip" hidden></div>\n' + "\n".join(scripts)
        + f"\n<script>{h._JS}</script></body></html>\n"
    )
