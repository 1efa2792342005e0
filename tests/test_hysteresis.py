"""Hysteresis of live alerts (``monitor.Monitor``, issue 23 item 8): a raised finding stays
raised until its rule has found it clear on ``clear_after`` logged points, an escalation is
immediate, an easing from critical is held, a poll the rule cannot judge is not a clear one;
``watch`` on the failing real runs, fed point by point, never raises, clears and raises again
within 20 logged points."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from grpo_doctor.config import CLEAR_AFTER, Settings, load_settings, merge
from grpo_doctor.errors import ConfigError
from grpo_doctor.findings import Status
from grpo_doctor.importers import load_runs
from grpo_doctor.monitor import Alert, Monitor
from grpo_doctor.rules.base import Outcome, Rule, Skip
from grpo_doctor.store import Run
from grpo_doctor.watch import Watcher, run_watch
from tests.helpers import REAL_RUNS, ar1, make_run, run_cli
from tests.test_real_runs import FAILING

# --- a rule whose verdict the test writes: the last reward, 0 ok / 1 warning / 2 critical, -1
# not judged (a Skip) -- so the monitor's bookkeeping is tested on its own ---------------------

LEVEL = Rule(id="level", title="the last logged level", params=(), requires=("reward_mean",))


@LEVEL.detects
def _level(run: Run, params: Mapping[str, float]) -> Outcome:
    _, values = run.finite_series("reward_mean")
    level = int(values[-1])
    if level < 0:
        raise Skip("not enough data")
    status = (Status.OK, Status.WARNING, Status.CRITICAL)[level]
    return Outcome(status, f"level {level}", onset_step=run.last_step)


def level_monitor(clear_after: int = CLEAR_AFTER) -> Monitor:
    monitor = Monitor(Settings(clear_after=clear_after))
    monitor._rules, monitor._params = [LEVEL], {"level": {}}
    return monitor


def replay(monitor: Monitor, run: Run, every: int = 1, start: int = 0
           ) -> tuple[list[tuple[int, Alert]], list[tuple[int, dict[str, int]]]]:
    """``run`` fed to ``monitor`` a prefix at a time (a poll every ``every`` logged points
    after ``start``, and at the end): (logged points at the poll, alert) for every alert, and
    (logged points, severities shown) at every poll."""
    alerts, shown = [], []
    n = run.n_steps
    for points in [*range(start + every, n, every), n]:
        alerts += [(points, a) for a in monitor.evaluate(run.truncated(int(run.steps[points - 1])))]
        shown.append((points, {c.mode: c.status.rank for c in monitor.checks if c.fired}))
    return alerts, shown


LEVEL_E = Rule(id="level_e", title="the last logged level, read with the entropy", params=(),
               requires=("reward_mean", "entropy"))


@LEVEL_E.detects
def _level_e(run: Run, params: Mapping[str, float]) -> Outcome:
    _, values = run.finite_series("reward_mean")
    status = (Status.OK, Status.WARNING, Status.CRITICAL)[int(values[-1])]
    return Outcome(status, f"level {int(values[-1])}", onset_step=run.last_step,
                   key_metric="entropy")


def test_a_finding_is_not_cleared_at_the_poll_where_its_signal_jumps_again() -> None:
    """Clear for 20 logged points, but the newest entropy far outside its calm stretch: the
    poll where the signal moves again is no time to call the finding clear (helper-67: a
    truncation pile-up cleared at the step the next one began, raised again 3 points on).
    The clear waits for a poll where the signal is calm."""
    n = 40
    level = np.r_[np.ones(5), np.zeros(n - 5)]
    entropy = 1.0 + 0.01 * np.sin(np.arange(n))
    entropy[24] = 3.0  # the 25th point: where the clear would fall
    monitor = Monitor(Settings(clear_after=CLEAR_AFTER))
    monitor._rules, monitor._params = [LEVEL_E], {"level_e": {}}
    alerts, _ = replay(monitor, make_run(reward=level, entropy=entropy))
    cleared = [points for points, a in alerts if a.cleared]
    assert cleared == [26], alerts
    calm = Monitor(Settings(clear_after=CLEAR_AFTER))
    calm._rules, calm._params = [LEVEL_E], {"level_e": {}}
    alerts, _ = replay(calm, make_run(reward=level, entropy=1.0 + 0.01 * np.sin(np.arange(n))))
    assert [points for points, a in alerts if a.cleared] == [25], alerts


def flaps(shown: Sequence[tuple[int, dict[str, int]]], within: int
          ) -> list[tuple[str, int, int, int, int]]:
    """Each finding shown at a severity (or above), then below it, then at it again, all within
    ``within`` logged points: (mode, severity rank, raised at, fell at, raised again at)."""
    out = []
    entered: dict[tuple[str, int], int] = {}  # when each (mode, level) was last reached
    fell: dict[tuple[str, int], int] = {}
    before: dict[str, int] = {}
    for points, ranks in shown:
        for mode in set(before) | set(ranks):
            was, now = before.get(mode, 0), ranks.get(mode, 0)
            for level in (1, 2):
                key = (mode, level)
                if was >= level > now:
                    fell[key] = points
                elif now >= level > was:
                    if key in fell and points - entered[key] <= within:
                        out.append((mode, level, entered[key], fell[key], points))
                    entered[key] = points
                    fell.pop(key, None)
        before = ranks
    return out


def levels_run(levels: Sequence[int]) -> Run:
    return make_run(reward=np.asarray(levels, dtype=float))


# --- the bookkeeping ------------------------------------------------------------------------


def test_a_flapping_finding_is_raised_once_and_cleared_once_it_stayed_clear() -> None:
    flapping = [1, 0, 0, 1, 0, 1, 1, 0, 0, 0] * 3
    run = levels_run([0] * 10 + flapping + [0] * 25)
    monitor = level_monitor()
    alerts, shown = replay(monitor, run)
    assert [(p, a.event, a.severity) for p, a in alerts] == [
        (11, "alert", Status.WARNING), (57, "cleared", Status.OK)]
    cleared = alerts[1][1]
    # Last raised at point 37 (step 37): clear on the 20 points after it.
    assert (cleared.last_seen_step, cleared.clear_points, cleared.step) == (37, 20, 57)
    assert cleared.previous is Status.WARNING and cleared.first_alert_step == 11
    assert "last seen at step 37, clear for 20 logged points since; cleared at step 57" \
        in cleared.line()
    event = cleared.to_dict()
    assert (event["event"], event["last_seen_step"], event["clear_points"], event["step"]) == (
        "cleared", 37, 20, 57)
    assert all(ranks == {"level": 1} for points, ranks in shown if 11 <= points < 57)
    assert not flaps(shown, within=CLEAR_AFTER)


def test_a_new_episode_after_a_recovery_is_alerted_though_the_old_one_is_still_held() -> None:
    """Raised, then clear on 12 logged points (held: under the 20 a clear needs), then raised
    again: the run came back and broke anew, and a monitor silent under the first alert had
    said nothing of the second (rho1.00: a crash at step 45 the reward came back from by 55,
    the real one at 130). A flicker (clear on a few points) stays one alert."""
    run = levels_run([0] * 10 + [1] * 5 + [0] * 12 + [1] * 10 + [0] * 3 + [1] * 5)
    alerts, _ = replay(level_monitor(), run)
    assert [(p, a.event, a.earlier_onset) for p, a in alerts] == [
        (11, "alert", None), (28, "alert", 11)], alerts
    again = alerts[1][1]
    assert again.previous is None and again.first_alert_step == 28
    assert "(a new episode: the one from step 11 recovered)" in again.line()
    assert again.to_dict()["earlier_onset"] == 11


def test_a_warning_back_after_its_clear_needs_two_polls_in_a_row_however_late() -> None:
    """An out-of-reach task checked every 10 steps: no_progress raised at 120, cleared at 160,
    raised again at 200 on one poll (helper-57). A cleared warning comes back only at the
    second poll in a row that fires it, however long after its clear; a critical at once."""
    def polled(late: Sequence[int]) -> list[tuple[int, str, Status]]:
        # Raised at the poll of point 20, cleared at 40; then ``late`` at the polls of 70, 80.
        levels = [0] * 10 + [1] * 10 + [0] * 49 + [late[0]] + [0] * 9 + [late[1]] + [0] * 10
        alerts, _ = replay(level_monitor(), levels_run(levels), every=10)
        return [(p, a.event, a.severity) for p, a in alerts]

    start = [(20, "alert", Status.WARNING), (40, "cleared", Status.OK)]
    assert polled([1, 0]) == start
    assert polled([1, 1]) == [*start, (80, "alert", Status.WARNING)]
    assert polled([2, 0])[2] == (70, "alert", Status.CRITICAL)
    # The last poll of a complete run has no next one: a warning it fires again is raised
    # then (trial 81: a watch ended "healthy" where every one-shot reading said warning).
    monitor = level_monitor()
    alerts, _ = replay(monitor, levels_run([0] * 10 + [1] * 10 + [0] * 49 + [1]), every=10)
    assert [(p, a.event) for p, a in alerts] == [(20, "alert"), (40, "cleared")]
    assert monitor.awaiting()
    last = monitor.evaluate(monitor.run, final=True)
    assert [(a.event, a.severity) for a in last] == [("alert", Status.WARNING)]
    assert not monitor.awaiting()


def test_while_held_the_monitor_says_how_far_the_clear_has_got() -> None:
    run = levels_run([1] * 5 + [0] * 7)
    monitor = level_monitor()
    replay(monitor, run)
    held = monitor.clearing["level"]
    assert (held.now, held.points, held.of, held.last_seen_step) == (Status.OK, 7, 20, 5)
    assert held.text() == "clearing: clear for 7 of 20 logged points"
    assert monitor.severities() == {"level": 1}  # the callback's doctor/level
    assert monitor.diagnosis().check("level").status is Status.WARNING


def test_an_escalation_is_immediate_and_an_easing_is_held() -> None:
    # warning, critical at point 6, then warning with critical now and then, then 20 warnings
    # (eased: said once, so a JSON reader that saw "critical" knows), then critical again:
    # shown at once and alerted as an escalation from the warning it eased to.
    run = levels_run([1] * 5 + [2] + [1, 1, 2, 1, 2] + [1] * 20 + [2])
    monitor = level_monitor()
    alerts, shown = replay(monitor, run)
    assert [(p, a.event, a.severity, a.previous) for p, a in alerts] == [
        (1, "alert", Status.WARNING, None), (6, "alert", Status.CRITICAL, Status.WARNING),
        (31, "eased", Status.WARNING, Status.CRITICAL),
        (32, "alert", Status.CRITICAL, Status.WARNING)]
    eased = alerts[2][1]
    assert eased.first_alert_step == 1 and eased.clear_points == 20 and eased.news_only
    assert not eased.escalated and alerts[3][1].escalated
    assert eased.line().startswith(
        "EASED level to warning (was critical, first alerted at step 1): below critical for "
        "20 logged points; eased at step 31.")
    assert eased.to_dict()["event"] == "eased" and eased.to_dict()["eased"] is True
    ranks = [r["level"] for _, r in shown]
    assert ranks[5:30] == [2] * 25  # held through the warnings
    assert ranks[30] == 1  # 20 points below critical (points 12-31): eased
    assert ranks[31] == 2  # critical again at once
    held = level_monitor()
    replay(held, levels_run([2] + [1] * 4))
    easing = held.clearing["level"]
    assert easing.text() == "easing: below critical for 4 of 20 logged points"


def test_a_poll_the_rule_cannot_judge_is_not_a_clear_one() -> None:
    run = levels_run([1] + [-1] * 30 + [0] * 19 + [0])
    monitor = level_monitor()
    alerts, _ = replay(monitor, run.truncated(int(run.steps[30])))
    assert [a.event for _, a in alerts] == ["alert"]
    held = monitor.clearing["level"]
    assert (held.now, held.points) == (Status.SKIPPED, 0)
    assert held.text().startswith("held: not judged at the last poll; clear for 0 of 20")
    assert monitor.severities() == {"level": 1}  # still raised
    assert monitor.diagnosis().check("level").status is Status.WARNING
    alerts, _ = replay(monitor, run, start=31)  # on to the end: 20 clear points
    cleared = [a for _, a in alerts if a.cleared]
    assert len(cleared) == 1 and cleared[0].clear_points == 20 and cleared[0].step == 51
    assert cleared[0].last_seen_step == 1


def test_points_are_logged_points_however_many_a_poll_brings() -> None:
    run = levels_run([1] * 10 + [0] * 30)
    alerts, _ = replay(level_monitor(), run, every=10)
    (p, cleared), = [(p, a) for p, a in alerts if a.cleared]
    assert p == 30 and cleared.clear_points == 20 and cleared.last_seen_step == 10
    # A shorter hold on request: clear_after=3 is the next poll.
    alerts, _ = replay(level_monitor(clear_after=3), run, every=10)
    assert [p for p, a in alerts if a.cleared] == [20]


# --- a real rule on a curve that flaps ------------------------------------------------------


def zero_std_flapping(n: int = 120, seed: int = 0) -> Run:
    """Half the steps' groups all equal, at random: the zero-std share sits on the 50% line
    that warns, and rises past 80% now and then, so advantage_collapse comes and goes."""
    rng = np.random.default_rng(seed)
    std = np.where(rng.random(n) < 0.5, 0.0, 0.2)
    return make_run(reward=0.5 + ar1(seed, n, 0.02), reward_std=std)


def test_a_real_rule_on_a_flapping_curve_does_not_flap() -> None:
    run = zero_std_flapping()
    only = ("advantage_collapse",)
    before, shown = replay(Monitor(Settings(clear_after=1, select=only)), run)
    assert sum(a.cleared for _, a in before) >= 3 and flaps(shown, CLEAR_AFTER)  # the scenario
    alerts, shown = replay(Monitor(Settings(select=only)), run)
    assert not flaps(shown, CLEAR_AFTER), flaps(shown, CLEAR_AFTER)
    assert len(alerts) < len(before) / 2
    for points, alert in alerts:
        if alert.cleared:
            assert alert.clear_points is not None and alert.clear_points >= CLEAR_AFTER
            assert alert.last_seen_step is not None and alert.step == int(
                run.steps[points - 1]) and alert.last_seen_step <= alert.step - CLEAR_AFTER


def test_the_callback_does_not_flap() -> None:
    pytest.importorskip("transformers")
    from grpo_doctor.integrations.trl import DoctorCallback
    from tests.test_callback import _drive

    run = zero_std_flapping()
    logs = {int(s): {"reward": float(run.frame["reward_mean"].iloc[i]),
                     "reward_std": float(run.frame["reward_std"].iloc[i])}
            for i, s in enumerate(run.steps)}
    doctor = DoctorCallback(every_n_steps=1, stop_on=None, print_alerts=False,
                            settings=Settings(select=("advantage_collapse",)))
    sent = _drive(doctor, logs)
    shown = [(i + 1, {"advantage_collapse": int(log.get("doctor/advantage_collapse", 0))})
             for i, log in enumerate(sent)]
    assert any(r["advantage_collapse"] for _, r in shown)
    assert not flaps(shown, CLEAR_AFTER)


def test_a_callback_checking_every_ten_steps_does_not_flap_nor_flip_its_advice() -> None:
    """Trial 43's real TRL runs checked as ``DoctorCallback`` checks them (every 10 steps):
    at temperature 0.2 a warning had been raised at step 50, cleared at 80 and raised at 90;
    on a task out of reach the first action had flipped "easier prompts" -> "look at the
    groups" -> "easier prompts" at steps 60, 70 and 80."""
    from dataclasses import replace

    from grpo_doctor.recipe import flat_config
    from tests.test_advice import TINY_RECIPE, TRIAL

    for name in ("trl_temperature_0.2", "trl_hard_task"):
        run = load_runs(TRIAL / f"{name}.csv")[0]
        cfg = flat_config(json.loads((TRIAL / f"{name}.config.json").read_text()))
        alerts, shown = replay(Monitor(Settings(recipe=TINY_RECIPE)), replace(run, config=cfg),
                               every=10)
        assert not flaps(shown, 20), (name, flaps(shown, 20))
        advice = [a.first_action.split()[:2] for _, a in alerts if a.first_action]
        back = [i for i in range(2, len(advice)) if advice[i] == advice[i - 2] != advice[i - 1]]
        assert not back, (name, advice)


def test_the_first_live_advice_names_the_cause_from_the_first_poll() -> None:
    """Checked every 10 steps (helper-57): on a task out of reach the first alert had said
    "look at a few equal-reward groups: all right ... or all wrong" beside a correctness term
    at 0.06; at temperature 0.2 it had opened "no roll-back: the run came through it" on a
    run sampling near-greedily from step 1."""
    from dataclasses import replace

    from grpo_doctor.recipe import flat_config
    from tests.test_advice import TINY_RECIPE, TRIAL

    first = {}
    for name in ("trl_temperature_0.2", "trl_hard_task"):
        run = load_runs(TRIAL / f"{name}.csv")[0]
        cfg = flat_config(json.loads((TRIAL / f"{name}.config.json").read_text()))
        alerts, _ = replay(Monitor(Settings(recipe=TINY_RECIPE)), replace(run, config=cfg),
                           every=10)
        first[name] = next(a.first_action for _, a in alerts if a.first_action)
    assert first["trl_hard_task"].startswith("the prompts are out of reach (correctness_reward "
                                             "is at most"), first
    assert first["trl_temperature_0.2"].startswith("temperature 0.2 -> 1.0")
    assert first["trl_temperature_0.2"].endswith("no roll-back: no checkpoint learned from the "
                                                 "policy's own samples"), first


# --- configuration and what watch shows -----------------------------------------------------


def test_clear_after_from_the_config_file_and_the_command_line(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]
                                                               ) -> None:
    assert Settings().clear_after == CLEAR_AFTER == 20
    config = tmp_path / "grpo-doctor.toml"
    config.write_text("clear-after = 5\n")
    settings = load_settings(config)
    assert settings.clear_after == 5
    assert merge(settings, clear_after=8).clear_after == 8
    assert merge(settings).clear_after == 5
    for bad in ("0", "2.5", "true", '"ten"'):
        config.write_text(f"clear-after = {bad}\n")
        with pytest.raises(ConfigError, match="clear-after must be a whole number"):
            load_settings(config)
    log = tmp_path / "run.csv"
    log.write_text("step,reward\n1,0.5\n")
    code, _, err = run_cli(capsys, "watch", str(log), "--once", "--clear-after", "0")
    assert code == 2 and "--clear-after" in err
    code, _, _ = run_cli(capsys, "watch", str(log), "--once", "--clear-after", "5")
    assert code == 0


def test_watch_shows_a_held_finding_and_says_when_and_why_it_cleared(tmp_path: Path) -> None:
    lines = ["step,reward\n"] + [f"{i + 1},{v}\n" for i, v in enumerate([1] * 3 + [0] * 25)]
    path = tmp_path / "run.csv"
    watcher = Watcher(path, Settings(clear_after=20))
    watcher.monitor._rules, watcher.monitor._params = [LEVEL], {"level": {}}

    written = [0]

    def grow(end: int) -> list[dict]:
        """Append the log's lines up to ``end``, poll once: the JSON events."""
        with path.open("a") as fh:
            fh.write("".join(lines[written[0]:end]))
        written[0] = end
        out = io.StringIO()
        run_watch(watcher, output="json", once=True, out=out, err=io.StringIO())
        return [json.loads(line) for line in out.getvalue().splitlines()]

    assert [e["event"] for e in grow(4)] == ["alert", "status"]  # raised on points 1-3
    *alerts, status = grow(9)  # clear on points 4-8
    assert not alerts
    (finding,) = status["findings"]
    assert finding["status"] == "warning"
    assert finding["clearing"] == {"now": "ok", "points": 5, "of": 20, "last_seen_step": 3}
    from grpo_doctor.reporters.live import status_line

    findings, _, do = status_line(watcher).partition(". Do first: ")
    assert findings.endswith(
        "level warning (first alert at step 1; clearing: clear for 5 of 20 logged points)")
    assert do == watcher.first_action  # what to do first, while the finding is held
    cleared, status = grow(len(lines))
    assert cleared["event"] == "cleared" and cleared["previous"] == "warning"
    assert (cleared["last_seen_step"], cleared["clear_points"], cleared["step"]) == (3, 25, 28)
    assert cleared["summary"] == "level 0"  # why: what the rule says now
    assert status["findings"] == []


# --- the failing real runs, fed point by point ----------------------------------------------


@pytest.mark.skipif(not REAL_RUNS.is_dir(), reason="shared real runs not present")
@pytest.mark.parametrize("path", FAILING)
def test_watch_on_a_failing_real_run_does_not_flap(path: str) -> None:
    """No finding raised, cleared and raised again within 20 logged points (nor critical,
    eased and critical again). A poll per logged point up to 100 points; a longer run is
    polled every few points so that it takes about 100 polls, which the clear counts in
    logged points all the same."""
    if not (REAL_RUNS / path).exists():
        pytest.skip(f"{path} not present")
    for run in load_runs(REAL_RUNS / path):
        every = max(1, math.ceil(run.n_steps / 100))
        alerts, shown = replay(Monitor(), run, every)
        assert not flaps(shown, within=20), flaps(shown, within=20)
        for points, alert in alerts:
            if alert.cleared:
                assert alert.clear_points is not None and alert.clear_points >= CLEAR_AFTER
                assert alert.last_seen_step is not None
                seen = int(np.searchsorted(run.steps, alert.last_seen_step)) + 1
                assert points - seen >= CLEAR_AFTER


def test_a_farmed_term_is_named_live_from_the_poll_its_task_fell() -> None:
    """Trial 51's repetition bonus at weight 20, checked every 10 steps: from step 130 the
    live advice had been "restart from the initial model, learning_rate ..." (an entropy
    sharpening from step 1 as the root), the task term's fall 0.9 -> 0 read as "did not
    improve (0.484 the median of the first and of the last fifth)"."""
    from dataclasses import replace

    from grpo_doctor.recipe import flat_config
    from tests.test_advice import TINY_RECIPE, TRIAL

    run = load_runs(TRIAL / "trl_structure_w20.csv")[0]
    cfg = flat_config(json.loads((TRIAL / "trl_structure_w20.config.json").read_text()))
    alerts, _ = replay(Monitor(Settings(recipe=TINY_RECIPE)), replace(run, config=cfg), every=10)
    late = [a for p, a in alerts if a.step is not None and a.step >= 130 and a.first_action]
    assert late and all(a.first_action.startswith("structure_reward's weight 20 -> 0")
                        for a in late), [(a.step, a.first_action[:60]) for a in late]
    gamed = next(a for _, a in alerts if a.mode == "format_gaming")
    assert "while correctness_reward fell" in gamed.summary, gamed.summary


def test_a_task_term_that_climbed_and_fell_is_no_stall_while_it_falls() -> None:
    """Trial 51's farmed repetition bonus, read at step 130: correctness 0.41 -> 0.875 -> 0 had
    read "stayed low (0.47 -> 0.406)" beside "the reward barely moved (0.961 -> 1.72)", its
    climb lost in the noise of its own crash."""
    from grpo_doctor.engine import diagnose

    run = load_runs(Path(__file__).parent / "fixtures" / "trial" / "trl_structure_w20.csv")[0]
    check = diagnose(run.truncated(130)).check("no_progress")
    assert check.status == "ok" and "then fell back to 0: it learned, then lost it" in (
        check.summary), check.summary


@pytest.mark.skipif(not REAL_RUNS.is_dir(), reason="shared real runs not present")
def test_watch_alerts_the_real_crash_after_an_excursion_the_run_came_back_from() -> None:
    """nips rho1.00 fed point by point (helper-70): the excursion at steps 40-50 raised
    reward_overfit at 45; the reward was back by 55 and the alert held. The real crash at
    130-150 brought no alert. It is now one, saying the first episode recovered."""
    path = REAL_RUNS / "trl-console" / "nips-grpo-dynamics_exp1a_rho1.00_seed42.log"
    if not path.exists():
        pytest.skip("rho1.00 not present")
    alerts, _ = replay(Monitor(), load_runs(path)[0])
    crash = [a for _, a in alerts if a.mode == "reward_overfit" and not a.cleared]
    assert len(crash) == 2, [a.line() for a in crash]
    assert crash[0].step <= 50 and 130 <= crash[1].step <= 150
    assert crash[1].earlier_onset is not None and crash[1].earlier_onset < 50
    assert "a new episode" in crash[1].line()


@pytest.mark.skipif(not REAL_RUNS.is_dir(), reason="shared real runs not present")
def test_watch_read_whole_ties_an_earlier_episodes_first_alert_to_this_episodes() -> None:
    """rho1.00 read in one poll (``watch --once``; helper-106): advantage_collapse's first
    alert (40) came from an episode its rule saw clear by 60, beside an onset of 135 and
    nothing in the JSON to tie them. The alert carries this episode's own alert, as
    diagnose's JSON does."""
    path = REAL_RUNS / "trl-console" / "nips-grpo-dynamics_exp1a_rho1.00_seed42.log"
    if not path.exists():
        pytest.skip("rho1.00 not present")
    run = load_runs(path)[0]
    alerts = {a.mode: a for a in Monitor().evaluate(run)}
    collapse = alerts["advantage_collapse"]
    assert collapse.first_alert_step is not None and collapse.onset_step is not None
    assert collapse.first_alert_step < collapse.onset_step
    assert collapse.episode_alert_step is not None
    assert collapse.episode_alert_step >= collapse.onset_step
    assert collapse.to_dict()["episode_alert_step"] == collapse.episode_alert_step
    assert f"this one's at step {collapse.episode_alert_step}" in collapse.line()


def test_a_budget_cut_from_the_first_logs_is_raised_by_one_factor_at_every_poll() -> None:
    """Trial 77 (len7, watched live): "max_completion_length 7 -> 28", then "-> 14", then
    "-> 28" again as the late share of cut completions crossed 95%, beside the finding's own
    "7 -> 14". The factor is read from the first logs, which a growing log does not move."""
    import re

    from grpo_doctor.recipe import flat_config

    trial = Path(__file__).parent / "fixtures" / "trial"
    run = load_runs(trial / "trl_budget_8.csv")[0]
    cfg = flat_config(json.loads((trial / "trl_budget_8.config.json").read_text()))
    monitor = Monitor(Settings(run_config=cfg))
    alerts, _ = replay(monitor, run, every=5, start=10)
    targets = {m for _, a in alerts for text in (a.first_action or "", *a.remedies)
               for m in re.findall(r"(?:max_completion_length|max response length) 8 -> (\d+)",
                                   str(text))}
    assert len(targets) == 1, targets


def test_a_row_filled_in_after_a_poll_read_it_is_no_rewritten_log():
    """A tracker writes a step's metrics one at a time (MLflow, SwanLab): a poll mid-step reads
    the last row part-empty, and the next finds it filled. That had counted the whole log as
    new points at every poll ("clear for 274 logged points" at step 274 of a live MLflow watch,
    the finding cleared and raised again 7 points later; trial 79). A value that changed is
    still a rewritten log."""
    rng = np.random.default_rng(3)
    reward, entropy = rng.normal(1, 0.1, 60), rng.normal(0.5, 0.01, 60)
    monitor = Monitor()
    first = entropy[:40].copy()
    first[-1] = np.nan  # read mid-step: its entropy not written yet
    monitor.evaluate(make_run(reward=reward[:40], entropy=first))
    assert monitor._new_points(make_run(reward=reward[:45], entropy=entropy[:45])) == 5
    changed = reward[:45].copy()
    changed[10] += 1.0
    assert monitor._new_points(make_run(reward=changed, entropy=entropy[:45])) == 45


def test_a_watch_judges_its_advice_with_the_config_files_recipe():
    """Trial 80: `watch` judged the lr against the chapter's 5e-6 ceiling ("1e-4 -> 2.5e-6")
    where `diagnose` in the same folder used grpo-doctor.toml's [recipe.learning_rate] high
    5e-4 ("1e-4 -> 5e-5"): the two commands gave different first actions for one run."""
    import json

    from grpo_doctor.importers import load_runs
    from grpo_doctor.recipe import flat_config
    from tests.helpers import REPO

    trial = REPO / "tests" / "fixtures" / "trial"
    run = load_runs(trial / "lr_3e-3_clip_100.csv")[0]
    cfg = flat_config(json.loads((trial / "lr_3e-3_clip_100.config.json").read_text()))
    tiny = {"learning_rate": {"high": 5e-4}}
    monitor = Monitor(Settings(recipe=tiny, run_config=cfg))
    monitor.evaluate(run)
    watched = monitor.diagnosis().root_cause.first_action
    from grpo_doctor.config import DoctorConfig
    from grpo_doctor.engine import diagnose

    diagnosed = diagnose(run, DoctorConfig(recipe=tiny, run_config=cfg)).root_cause.first_action
    assert "0.003 -> 2.5e-4" in diagnosed, diagnosed
    assert "0.003 -> 2.5e-4" in watched, watched
    assert "0.003 -> 2.5e-4" in (monitor.first_action or ""), monitor.first_action


def test_a_verdict_on_the_whole_log_is_not_cleared_by_the_log_growing():
    """Trial 81: beta 0 -> 1 at step 161, learning held back: no_progress raised at 180,
    cleared at 240 (the log's second half then held the rise before the resume) and the watch
    ended "healthy" where every one-shot reading of the finished run said warning. Its clear
    needs a quarter of the log as well."""
    trial = Path(__file__).parent / "fixtures" / "trial"
    run = load_runs(trial / "trl_beta_0_to_1_from_161.csv")[0]
    run.config.update(json.loads((trial / "trl_beta_0_to_1_from_161.config.json").read_text()))
    monitor = Monitor(Settings(select=("no_progress",)))
    alerts, _ = replay(monitor, run, every=12)
    assert [(p, a.event) for p, a in alerts] == [(180, "alert")], alerts
    assert monitor.diagnosis().check("no_progress").status is Status.WARNING
    held = monitor.clearing.get("no_progress")
    assert held is None or held.of == max(CLEAR_AFTER, run.n_steps // 4), held


def test_watch_raises_the_whole_runs_verdicts_as_diagnose_does():
    """h121: watch on the adagrad run (a low task score under an optimizer far outside the
    recipe) said "warning ... no failure mode found", with no alert, where diagnose raised
    no_progress with the optimizer first: --exit-on warning exited 0."""
    from grpo_doctor.recipe import flat_config

    trial = Path(__file__).parent / "fixtures" / "trial"
    run = load_runs(trial / "trl_optim_adagrad.csv")[0]
    config = flat_config(json.loads((trial / "trl_optim_adagrad.config.json").read_text()))
    monitor = Monitor(Settings(run_config=config,
                               recipe={"learning_rate": {"high": 5e-4}}))
    alerts, _ = replay(monitor, run, every=50)
    assert [(a.mode, a.severity) for _, a in alerts] == [("no_progress", Status.WARNING)], alerts
    assert alerts[0][1].first_action.startswith("optim adagrad -> adamw_torch")
