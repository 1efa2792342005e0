"""`grpo-doctor explain TERM`: every word the reports use that a practitioner may not know has
an entry in plain words (grpo_doctor/glossary.py)."""

import re

import pytest

from grpo_doctor import glossary
from grpo_doctor.api import example_names, example_path
from grpo_doctor.engine import diagnose
from grpo_doctor.importers import load_run
from grpo_doctor.metrics import Metric
from grpo_doctor.reporters.terminal import render_to_text
from grpo_doctor.rules import RULES, rule_named
from tests.helpers import REPO, run_cli

#: Words of the rules' and the root cause's sentences that a practitioner may not know (the
#: issue's "LLD", "zero-std share", is_ratio_max, "effective group ratio" among them).
JARGON = [
    "LLD", "LLDS", "zero-std share", "zero-std", "is_ratio_max", "effective group ratio",
    "onset", "first alert", "episode", "first episode", "incident", "root cause",
    "follows from the root cause", "setup problem", "roll back", "recipe", "band", "leash",
    "adaptive KL", "k3", "reference model", "held-out", "anti-cheat", "verifier",
    "dynamic sampling", "DAPO", "Dr. GRPO", "GSPO", "overlong shaping", "token-mean",
    "seq-mean", "clip-higher", "mismatch", "TIS", "MIS", "Mann-Kendall", "Hamed-Rao",
    "Theil-Sen", "Kendall tau", "change point", "sharpening", "entropy bonus", "bf16", "fp16",
    "loss scaling", "LoRA", "warm-up", "curriculum", "saturated", "plateau", "truncated",
    "grad norm", "pre-clip", "importance ratio", "clip fraction", "baseline", "inconclusive",
    "healthy", "advantage", "group", "reward component", "correctness term", "first sign",
    "catastrophic update", "reward crash", "burst", "nats", "no call", "rolling median",
]


@pytest.mark.parametrize("word", JARGON)
def test_each_word_the_reports_use_is_explained(word):
    term = glossary.lookup(word)
    assert term is not None, word
    assert len(term.meaning.split()) >= 8  # a sentence, not a synonym


@pytest.mark.parametrize("metric", [m.value for m in Metric])
def test_every_canonical_metric_name_is_explained(metric):
    assert glossary.lookup(metric) is not None, metric


def test_lookup_ignores_case_spaces_dashes_and_underscores():
    assert glossary.lookup("zero_std_share") is glossary.lookup("Zero-Std Share")
    assert glossary.lookup("IS-RATIO-MAX") is glossary.lookup("is_ratio_max")
    assert glossary.lookup("nonsense word") is None


def test_no_spelling_names_two_entries_and_every_see_exists():
    seen: dict[str, str] = {}
    for term in glossary.TERMS:
        for name in (term.name, *term.aliases):
            key = glossary._key(name)
            assert seen.setdefault(key, term.name) == term.name, (name, seen[key])
        for other in term.see:
            try:
                rule_named(other)
            except KeyError:
                assert glossary.lookup(other) is not None, (term.name, other)


def test_the_metric_names_and_jargon_in_real_reports_all_resolve():
    """The reports of the bundled examples and a corpus run: every canonical metric name they
    print, and every JARGON word, can be looked up."""
    texts = [render_to_text(diagnose(load_run(example_path(n))), width=100)
             for n in example_names()]
    corpus = REPO / "tests/fixtures/corpus/22_entropy_bonus_0.5"
    texts.append(render_to_text(diagnose(load_run(corpus)), width=100))
    said = "\n".join(texts)
    metrics = {m.value for m in Metric if re.search(rf"\b{m.value}\b", said)}
    assert metrics  # the reports do name metrics
    assert all(glossary.lookup(m) for m in metrics)
    used = [w for w in JARGON if w.lower() in said.lower()]
    assert {"onset", "first alert", "root cause"} <= set(used)


def test_explain_a_term_a_mode_and_nothing(capsys):
    code, out, _ = run_cli(capsys, "explain", "zero-std share")
    assert code == 0 and out.startswith("zero-std share — The share of groups")
    assert "see: grpo-doctor explain advantage_collapse" in out
    code, out, _ = run_cli(capsys, "explain", "entropy-collapse")  # a mode wins
    assert code == 0 and out.startswith("entropy_collapse — ")
    code, out, _ = run_cli(capsys, "explain")
    assert code == 0 and all(r.id in out for r in RULES) and "LLD" in out
    code, _, err = run_cli(capsys, "explain", "frobnicate")
    assert code == 2 and "nothing to explain for 'frobnicate'" in err
