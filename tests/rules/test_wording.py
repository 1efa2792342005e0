"""What the rules say is read by people: direction words match the numbers beside them,
percentages are ones that can exist, no internal names, no repeated clauses. Checked on every
rule case and every corpus run."""

import json
import re
from pathlib import Path

import pytest

from grpo_doctor.engine import diagnose
from grpo_doctor.importers import load_runs
from tests.rules.cases import CASES

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"
NUM = r"(-?[\d,]*\.?\d+(?:e[+-]?\d+)?)"
MOVES = re.compile(rf"\b(rose|fell|grew|shrank|dropped|climbed|crashed|declined)\b[^;:]*?"
                   rf"\bfrom {NUM} to {NUM}")
UP, DOWN = {"rose", "grew", "climbed"}, {"fell", "shrank", "dropped", "crashed", "declined"}
STALLED = re.compile(rf"\breward (falling|not improving) \({NUM} -> {NUM}\)")
SHARE = re.compile(r"(\d+)% (?:of (?:groups|the gain|steps|completions|all steps|recent)|lost)")
INTERNAL = ("cui_fit", "the chapter", "Param(", "None", " nan", "inf%")


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _texts():
    for case in CASES:
        d = diagnose(case.build())
        for c in d.checks:
            yield case.name, c.mode, c.summary, [str(r) for r in c.remedies]
    labels = json.loads((CORPUS / "labels.json").read_text()) if CORPUS.is_dir() else []
    for e in labels:
        d = diagnose(load_runs(CORPUS / e["run"])[0])
        for c in d.checks:
            yield e["name"], c.mode, c.summary, [str(r) for r in c.remedies]


TEXTS = list(_texts())


@pytest.mark.parametrize("name,mode,summary,remedies", TEXTS,
                         ids=[f"{t[0]}:{t[1]}" for t in TEXTS])
def test_words_match_the_numbers(name, mode, summary, remedies):
    for m in MOVES.finditer(summary):
        word, a, b = m.group(1), _number(m.group(2)), _number(m.group(3))
        if word in UP:
            assert b >= a, summary
        if word in DOWN:
            assert b <= a, summary
    for m in STALLED.finditer(summary):  # "reward falling (a -> b)": b below a
        if m.group(1) == "falling":
            assert _number(m.group(3)) <= _number(m.group(2)), summary
    for m in SHARE.finditer(summary):
        assert int(m.group(1)) <= 100, summary
    for text in [summary, *remedies]:
        for word in INTERNAL:
            assert word not in text, (word, text)
        clauses = [c.strip(" ().") for c in re.split(r"[;(]", text) if c.strip(" ().")]
        assert len(clauses) == len(set(clauses)), text
