"""One harness runs every rule case (cases.py); meta-tests check each rule is complete."""

import pytest

from grpo_doctor.engine import diagnose
from grpo_doctor.rules import RULES
from tests.rules.cases import CASES, Case


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case: Case):
    run = case.build()
    check = diagnose(run).check(case.mode)
    assert check.status.value in case.statuses, check.summary
    if case.onset is not None:
        assert check.onset_step is not None
        assert abs(check.onset_step - case.onset) <= case.tolerance, (check.onset_step,
                                                                      check.summary)
        assert check.first_alert_step is not None
        assert check.first_alert_step >= check.onset_step
        assert check.remedies, "a finding must say what to change"


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_every_rule_is_documented_and_has_firing_and_quiet_cases(rule):
    for section in ("What it detects", "Why it matters", "How it is detected",
                    "False positives", "Remedies"):
        assert section in rule.doc, f"{rule.id} doc lacks {section!r}"
    assert rule.params, f"{rule.id} has no parameters"
    modes = [c for c in CASES if c.mode == rule.id]
    assert any(c.onset is not None for c in modes), f"{rule.id} has no firing case"
    assert any(c.statuses == ("ok",) for c in modes), f"{rule.id} has no quiet case"
