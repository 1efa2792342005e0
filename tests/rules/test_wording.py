"""What the rules say is read by people: direction words match the numbers beside them,
percentages are ones that can exist, no internal names, no repeated clauses. Checked on every
rule case and every corpus run."""

import functools
import json
import re
from collections.abc import Callable

import pytest

from grpo_doctor.engine import diagnose
from grpo_doctor.findings import Diagnosis
from grpo_doctor.rules import RULES
from tests.helpers import CORPUS, ar1, corpus_diagnosis, make_run
from tests.rules.cases import CASES, diagnosed

NUM = r"(-?[\d,]*\.?\d+(?:e[+-]?\d+)?)"
# "fell from 0.875 at step 35 to 0 at step 45" is one move: the step after each number is
# read past, so the pair is not taken from the next clause's "KL rose from a to b".
MOVES = re.compile(rf"\b(rose|fell|grew|shrank|dropped|climbed|crashed|declined)\b[^;:]*?"
                   rf"\bfrom {NUM}(?: at step [\d,]+)? to {NUM}")
UP, DOWN = {"rose", "grew", "climbed"}, {"fell", "shrank", "dropped", "crashed", "declined"}
STALLED = re.compile(rf"\breward (falling|not improving) \({NUM} -> {NUM}\)")
SHARE = re.compile(r"(\d+)% (?:of (?:groups|the gain|steps|completions|all steps|recent)|lost)")
INTERNAL = ("cui_fit", "the chapter", "Param(", "None", " nan", "inf%")


def _number(text: str) -> float:
    return float(text.replace(",", ""))


LABELS = json.loads((CORPUS / "labels.json").read_text()) if CORPUS.is_dir() else []
#: Every rule case and corpus run, by name, with how to get its diagnosis: made when a test
#: first asks, once per process, so collecting the tests costs nothing and each worker of a
#: parallel run makes only those its tests read.
SOURCES: dict[str, Callable[[], Diagnosis]] = {
    **{case.name: functools.partial(diagnosed, case) for case in CASES},
    **{e["name"]: functools.partial(corpus_diagnosis, e["run"]) for e in LABELS},
}
TEXTS = [(name, rule.id) for name in SOURCES for rule in RULES]


@pytest.mark.parametrize("name,mode", TEXTS, ids=[f"{t[0]}:{t[1]}" for t in TEXTS])
def test_words_match_the_numbers(name, mode):
    check = SOURCES[name]().check(mode)
    summary, remedies = check.summary, [str(r) for r in check.remedies]
    for m in MOVES.finditer(summary):
        word, a, b = m.group(1), _number(m.group(2)), _number(m.group(3))
        if word in UP:
            assert b >= a, summary
        if word in DOWN:
            assert b <= a, summary
    for m in STALLED.finditer(summary):  # "falling (a -> b)": b below a; "not improving": not up
        if m.group(1) == "falling":
            assert _number(m.group(3)) <= _number(m.group(2)), summary
        if m.group(1) == "not improving":
            assert _number(m.group(3)) <= _number(m.group(2)), summary
    for m in SHARE.finditer(summary):
        assert int(m.group(1)) <= 100, summary
    for text in [summary, *remedies]:
        for word in INTERNAL:
            assert word not in text, (word, text)
        clauses = [c.strip(" ().") for c in re.split(r"[;(]", text) if c.strip(" ().")]
        assert len(clauses) == len(set(clauses)), text


def test_a_burst_of_ratios_is_said_as_a_burst_not_as_a_share_of_recent_steps():
    """"PPO ratio max > 3; PPO ratio min < 0.3 (8% of recent steps)" on a real run: the 8%
    was the first excursion's, a burst mid-run whose recent share says nothing."""
    v = 1.3 + 0.01 * ar1(85, 100, 1.0)
    v[40:50:2] = 3.5  # half of 10 consecutive steps, none recent
    check = diagnose(make_run(train__probs_ratio_max=v)).check("ratio_instability")
    assert check.status.value == "warning"
    assert "(a burst: 50% or more of 10 consecutive logged steps)" in check.summary
    assert "of recent steps" not in check.summary


def test_a_reward_far_below_its_best_is_not_said_to_be_at_its_best():
    """"reward -5.5 -> -6, at its best level (-0.375): converged, not stalled" on a real run:
    no_progress was ok because nothing went backwards, not because the reward was at its
    best."""
    n = 100
    e = ar1(170, n, 0.005)
    r = 0.72 + (e + e[::-1]) / 2  # neither rising nor falling
    r[33:38], r[50:55] = 0.9, 0.3  # its best, and its range
    check = diagnose(make_run(train__reward=r)).check("no_progress")
    assert check.status.value == "ok"
    assert "at its best" not in check.summary
    assert check.summary.endswith("best 0.9; no significant trend either way"), check.summary
    assert check.evidence.get("unsettled")  # listed apart from the checks that passed


WHOLE_LOG = re.compile(r"over [\d,]+ (?:logged )?(?:points|steps)|on every logged step")


@pytest.mark.parametrize("name", list(SOURCES))
def test_a_findings_sentence_names_its_onset(name):
    """Issue 23 (6): "onset 40" beside "from step 135". The onset a finding shows is a step
    its sentence names ("from step N", "at step N", within "between steps A and B"), or the
    sentence speaks of the whole log and the onset is its first logged step."""
    from grpo_doctor.text import step_text

    d = SOURCES[name]()
    for check in d.findings:
        if check.onset_step is None:
            continue
        step = re.escape(step_text(check.onset_step))
        named = re.search(rf"\bsteps? {step}\b", check.summary) or any(
            _number(a) <= check.onset_step <= _number(b)
            for a, b in re.findall(r"between steps ([\d,]+) and ([\d,]+)", check.summary))
        whole = WHOLE_LOG.search(check.summary)
        assert named or whole, (check.mode, check.onset_step, check.summary)


def test_a_gradient_already_0_before_an_update_did_not_go_to_0():
    """rho0.50: the norm was 0 on four of the six logs before the spike at step 35 (groups
    all equal); "then ... the gradient norm went to 0" said the spike stopped it."""
    import numpy as np

    from grpo_doctor.rules.incidents import aftermath

    grad = np.r_[0.19, 0.21, 0, 0, 0, 0, 3.6, np.zeros(13)]
    reward = np.r_[0.85, 0.97, 0.85, 0.72, 1.0, 0.95, 0.875, np.zeros(13)]
    run = make_run(steps=np.arange(5, 105, 5), grad_norm=grad, reward=reward)
    assert not any("went to 0" in s for s in aftermath(run, 35))
    flowing = np.r_[0.19, 0.21, 0.2, 0.18, 0.22, 0.2, 3.6, np.zeros(13)]
    run = make_run(steps=np.arange(5, 105, 5), grad_norm=flowing, reward=reward)
    assert "the gradient norm went to 0" in aftermath(run, 35)


def test_a_crash_is_back_at_the_first_logged_value_back_above_half_way():
    """A length 110 -> 3 that climbs back 30, 84, 171, 258: back above half-way (56) at the
    log of 84, not where its 5-point median crosses."""
    import numpy as np

    from grpo_doctor.rules.incidents import crashes
    from grpo_doctor.rules.length_hacking import LEN

    v = np.r_[np.full(8, 110.0), 39, 4, np.full(18, 3.5), 30, 84, 171, 258, 300, 280, 290,
              270, 300, 310]
    steps = np.arange(5, 5 * (len(v) + 1), 5)
    run = make_run(steps=steps, response_length_mean=v, reward=np.full(len(v), 0.5))
    (crash,) = crashes(run, LEN, "mean completion length", share=0.0, within=5,
                       of_level=0.7)  # as length_hacking calls it
    first_back = int(steps[np.flatnonzero(v >= (110 + 3.5) / 2)[8]])
    assert crash.recovered_step == first_back == int(steps[len(v) - 9]), crash.summary
    assert f"at step {first_back}" in crash.summary


def test_a_reward_that_crashed_as_a_finding_began_is_said_from_where_it_fell():
    """KL drifting from step 305 as the reward crashed 0.7 -> 0.2 there: "reward not
    improving (0.0553 -> 0.0397)" judged the stretch from the onset, all of it after the
    fall. It says where the reward fell from."""
    import numpy as np

    from grpo_doctor.engine import diagnose
    from tests.test_advice import _breaks_after

    summary = diagnose(_breaks_after(np.full(500, 2e-6), 305)).check("kl_drift").summary
    assert "reward falling (0.707 -> 0.202) as it began" in summary, summary
    assert "with reward fell" not in summary  # "with reward fell" (helper-39)
    assert "not improving" not in summary


def _norms(base: float, spike_at: int, spike: float, after: float, n: int = 200,
           seed: int = 9):
    import numpy as np

    rng = np.random.default_rng(seed)
    g = base * np.exp(rng.normal(0, 0.4, n))
    g[spike_at] = spike
    g[spike_at + 1:] = after * np.exp(rng.normal(0, 0.4, n - spike_at - 1))
    return make_run(grad_norm=g, reward=0.5 + 0.001 * np.arange(n))


@pytest.mark.parametrize(("base", "spike", "after", "unrecovered"), [
    (0.003, 0.55, 0.003, False),  # trial 40's top_p 0.3: rare mixed groups, blips under 1
    (0.003, 0.55, 0.009, False),  # and the level 3x a tiny one after: still under any clip
    (0.7, 579.0, 0.6, False),     # back to its level at once: recovered, not "unrecovered"
    (0.14, 165.0, 0.7, True),     # no clip: the level 5x what it was, and stays there
])
def test_an_unrecovered_spike_is_one_the_norm_stays_up_after(base, spike, after, unrecovered):
    """"gradient norm exploding: unrecovered spike" had been said of a norm of 579 that
    fell back to 0.6 at the next step, and of a peak of 0.547 on a run whose norm was 0.003
    between its rare mixed groups (trial 40)."""
    check = diagnose(_norms(base, 150, spike, after)).check("grad_explosion")
    said = "unrecovered spike" in check.summary
    assert said is unrecovered, check.summary


def test_a_second_spike_soon_after_is_no_level_that_stayed_up():
    """Trial 43 (real TRL, a task too hard): norms of 0.2-0.6 between steps of 0 (no mixed
    group), 1.84 at step 124 and 1.86 at 130, back to 0.2-0.6 after. The second spike in the
    first one's window had read "unrecovered spike" (and the lr its cause) beside a late
    level below the early one."""
    import numpy as np

    rng = np.random.default_rng(43)
    g = rng.uniform(0.2, 0.35, 200)
    g[rng.random(200) < 0.43] = 0.0
    g[124:134] = [1.84, 0.0, 0.0, 0.0, 0.28, 0.0, 1.86, 0.95, 0.66, 0.26]
    check = diagnose(make_run(grad_norm=g, reward=0.5 + 0.01 * rng.standard_normal(200))
                     ).check("grad_explosion")
    assert "unrecovered" not in check.summary, check.summary


def test_a_clip_fraction_alone_says_nothing_of_how_far_the_ratios_went():
    """TRL logs a clip fraction and no ratio: "ratios within range" beside ratios that reached
    17 (trial 40) claimed what was never read."""
    import numpy as np

    n = 100
    clip_only = diagnose(make_run(reward=np.linspace(0.2, 0.8, n),
                                  clip_ratio__region_mean=np.full(n, 0.02)))
    assert "no ratio logged" in clip_only.check("ratio_instability").summary
    both = diagnose(make_run(reward=np.linspace(0.2, 0.8, n), ratio_max=np.full(n, 1.2),
                             clip_ratio__region_mean=np.full(n, 0.02)))
    assert both.check("ratio_instability").summary.startswith("ratios within range")


def test_a_reward_that_rose_after_the_onset_and_fell_later_is_said_so():
    """qwen35 rho0.70's truncation from step 5 read "reward falling (0.713 -> 0.00625)": the
    reward rose 0.2 -> 0.93 under it and crashed at step 150. A fall from a peak reached
    after the onset is said from the peak; a fall from the start stays "falling"."""
    import numpy as np

    from grpo_doctor.rules.signals import reward_progress

    n = 40
    steps = np.arange(5, 5 * n + 5, 5)
    rose = np.concatenate([np.linspace(0.2, 0.93, 10), np.full(20, 0.93), np.full(10, 0.01)])
    run = make_run(steps=steps, reward=rose + 0.01 * ar1(1, n, 1.0))
    words = reward_progress(run, 5).stalled_words()
    assert re.fullmatch(r"reward rose to 0\.9\d* by step \d+, then fell to 0\.0\d*", words), words
    fell = make_run(steps=steps, reward=np.linspace(0.9, 0.01, n) + 0.01 * ar1(2, n, 1.0))
    assert reward_progress(fell, 5).stalled_words().startswith("reward falling ("), \
        reward_progress(fell, 5).stalled_words()
