"""`grpo-doctor explain` and `grpo-doctor rules`: wrapped to the terminal, plain text, and
saying what `diagnose` really needs of each check."""

import re

import numpy as np
import pytest

from grpo_doctor.engine import diagnose
from grpo_doctor.findings import Status
from grpo_doctor.reporters.rule_doc import needs
from grpo_doctor.rules import RULES
from tests.helpers import make_run, run_cli


@pytest.mark.parametrize("width", [80, 132])
@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_explain_fits_the_terminal_and_reads_as_plain_text(capsys, monkeypatch, rule, width):
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, _ = run_cli(capsys, "explain", rule.cli_name)
    assert code == 0 and "What it detects" in out and "Remedies" in out
    assert max(len(line) for line in out.splitlines()) <= width
    assert "``" not in out  # RST literals read as plain names
    for p in rule.params:
        assert f"{p.name} = {p.default:g}" in out
    # every word of the docstring is still there, in order, and a word hyphenated across
    # the docstring's lines is one word ("near-deterministic", not "near- deterministic")
    assert not re.search(r"[A-Za-z]- [a-z]", out)
    words = re.sub(r"([A-Za-z])-\s+", r"\1-", rule.doc.replace("``", "")).split()
    assert out.split()[len(f"{rule.id} — {rule.title}".split()):][:len(words)] == words


def test_explain_uses_the_width_it_has(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "132")
    _, wide, _ = run_cli(capsys, "explain", "kl-drift")
    monkeypatch.setenv("COLUMNS", "80")
    _, narrow, _ = run_cli(capsys, "explain", "kl-drift")
    assert max(map(len, wide.splitlines())) > 100 and len(wide.splitlines()) < len(
        narrow.splitlines())
    assert "KL above stop_kl at any" in " ".join(narrow.split())


def _run_with(metrics, n=120):
    rng = np.random.default_rng(0)
    return make_run(**{m: 0.5 + 0.01 * rng.standard_normal(n) for m in metrics})


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_rules_never_hides_a_need_diagnose_skips_for(rule):
    """A run logging every metric a rule declares is judged by it, or the rule says in
    ``needs`` what else it looks for: `rules` then shows what `diagnose` would skip it for."""
    metrics = set(rule.requires) | {m for group in rule.requires_any for m in group}
    check = diagnose(_run_with(sorted(metrics or {"reward_mean"}))).check(rule.id)
    if check.status is Status.SKIPPED:
        assert rule.needs, f"{rule.id} skipped ({check.reason}) but `rules` lists no need"


def test_rules_says_what_diagnose_skips_for(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(capsys, "rules")
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 80
    entries = {}
    for line in out.splitlines():
        if not line.startswith(" "):
            key = line.split()[0]
        entries[key] = entries.get(key, "") + " " + line.strip()
    reward_hacking = " ".join(entries["reward_hacking"].split())
    assert "needs reward_mean and one of heldout_score, kl or an anti-cheat reward" in (
        reward_hacking)
    assert "needs a format-like and a correctness-like reward component" in " ".join(
        entries["format_gaming"].split())
    check = diagnose(_run_with(["reward_mean"])).check("reward_hacking")
    assert check.status is Status.SKIPPED and "anti-cheat reward component" in check.reason
    for rule in RULES:
        assert needs(rule), rule.id  # every check says what it needs
        assert " ".join(needs(rule).split()) in " ".join(entries[rule.id].split())


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_a_wrapped_parameter_help_hangs_under_its_first_column(capsys, monkeypatch, rule):
    """"adapt_kl = 5    sustained KL ... (critical with stalled" wrapped to "        reward)",
    under nothing: wrapped lines of a help start in the column where the help starts."""
    monkeypatch.setenv("COLUMNS", "80")
    _, out, _ = run_cli(capsys, "explain", rule.cli_name)
    lines = out.split("Parameters (defaults):\n", 1)[1].split("\n\n", 1)[0].splitlines()
    column = None
    for line in lines:
        head = next((p for p in rule.params if line.startswith(f"    {p.name} = ")), None)
        if head is not None:
            column = len(line) - len(line.split(f"{head.default:g}", 1)[1].lstrip())
        else:
            assert column is not None and line[:column].strip() == "" and line[column] != " "


def test_the_kl_bands_do_not_overlap_and_agree_with_the_parameters():
    """The docstring said "5-20 dangerous ... > 10 stop": bands that overlap. They are the
    spec's bands (failure-modes.md), each starting where the one before ends, and the rule's
    thresholds are named with their defaults."""
    import re

    from grpo_doctor.reporters.rule_doc import plain

    rule = next(r for r in RULES if r.id == "kl_drift")
    doc = " ".join(plain(rule.doc).split())
    bands = doc.split("in the usual bands: ", 1)[1].split(". And", 1)[0]
    lows = [float(x) for x in re.findall(r"(?:^|; )([\d.]+)-[\d.]+ ", bands)]
    highs = [float(x) for x in re.findall(r"(?:^|; )[\d.]+-([\d.]+) ", bands)]
    first = float(re.match(r"< ([\d.]+) normal", bands).group(1))
    last = float(re.search(r"; > ([\d.]+) ", bands).group(1))
    assert [first, *highs] == [*lows, last] == [0.5, 5, 20]
    params = {p.name: p.default for p in rule.params}
    assert params["drift_kl"] == 0.5 and params["adapt_kl"] == 5
    assert f"stop_kl, {params['stop_kl']:g}, inside this band" in bands
