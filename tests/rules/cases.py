"""Rule test cases as data: a constructed run, the rule, what it must say.

Firing cases carry the true onset and a tolerance; quiet cases are the hard healthy curves
(noisy slow declines, heavy-tailed spikes, warm-up transients, short runs, sparse logging,
gaps) on which a rule must stay ok (or skip).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from grpo_doctor.engine import diagnose
from grpo_doctor.findings import Diagnosis
from grpo_doctor.store import Run
from tests.helpers import ar1, make_run
from tests.rules import history


@dataclass(frozen=True)
class Case:
    name: str
    mode: str
    build: Callable[[], Run]
    statuses: tuple[str, ...]  # acceptable statuses
    onset: int | None = None  # true onset step, for firing cases
    tolerance: int = 0


@functools.cache
def diagnosed(case: Case) -> Diagnosis:
    """The default diagnosis of ``case``'s run, made once per test process: three test modules
    read it (the first alert replays the log, so a diagnosis is not cheap)."""
    return diagnose(case.build())


def sig(x):
    return 1 / (1 + np.exp(-x))


N = 1200
T = np.arange(1, N + 1)


def rising_reward(seed: int = 0, n: int = N) -> np.ndarray:
    t = np.arange(1, n + 1)
    return 0.2 + 0.5 * sig((t - n / 4) / (n / 10)) + ar1(seed, n, 0.02)


# --- entropy collapse ------------------------------------------------------------------------

def entropy_collapse_stalled() -> Run:
    fall = np.clip((T - 600) / 300, 0, None)
    ent = 1.2 * np.exp(-3.5 * fall) + np.abs(ar1(1, N, 0.005))
    reward = 0.5 + 0.1 * sig((T - 300) / 50) - 0.1 * np.clip((T - 800) / 300, 0, 1) + ar1(2, N,
                                                                                           0.02)
    return make_run(train__entropy=ent, train__reward=reward)


def entropy_noisy_slow_decline() -> Run:
    # Healthy: loses 40% over a long run, noisy, with reward rising.
    n = 5000
    t = np.arange(1, n + 1)
    ent = 1.0 * (1 - 0.4 * t / n) + ar1(3, n, 0.05)
    return make_run(train__entropy=ent, train__reward=rising_reward(4, n))


def entropy_warmup_transient() -> Run:
    # A quick early drop then a long flat stretch: normal sharpening.
    ent = 0.6 + 0.6 * np.exp(-T / 20) + ar1(5, N, 0.02)
    return make_run(train__entropy=ent, train__reward=rising_reward(6))


def entropy_benign_sharpening() -> Run:
    # Entropy falls 70% but keeps buying reward: healthy convergence.
    ent = 0.5 * np.exp(-T / 500) + 0.1 + ar1(7, N, 0.01)
    reward = 0.1 + 0.8 * (1 - np.exp(-T / 500)) + ar1(8, N, 0.02)
    return make_run(actor__entropy=ent, critic__score__mean=reward)


def entropy_every_10_steps() -> Run:
    steps = np.arange(10, 3010, 10)
    n = len(steps)
    fall = np.clip((steps - 1500) / 600, 0, None)
    ent = np.exp(-4 * fall) + np.abs(ar1(9, n, 0.004))
    reward = 0.5 + ar1(10, n, 0.02)
    return make_run(steps=steps, train__entropy=ent, train__reward=reward)


def entropy_short_monotone_collapse() -> Run:
    # Logged every 10 steps, five points: too few for a trend test, but unmistakable.
    return make_run(steps=np.arange(10, 60, 10), train__entropy=[1.03, 0.5, 0.11, 0.05, 0.008])


def entropy_short_noisy() -> Run:
    return make_run(train__entropy=[1.0, 0.5, 0.6, 0.1, 0.05])


# --- advantage collapse ----------------------------------------------------------------------

def zero_std_climbs() -> Run:
    z = np.clip(0.25 + 0.7 * sig((T - 700) / 30) + ar1(11, N, 0.03), 0, 1)
    return make_run(train__frac_reward_zero_std=z, train__reward=0.4 + ar1(12, N, 0.02))


def zero_std_grows_to_plateau(fall: bool = False, n: int = 120) -> Run:
    """Equal groups grow (0 -> ~60%) as the reward climbs to a plateau and crosses the
    warning line there (a converging run, as the healthy cosine corpus run at step 117); with
    ``fall`` the reward then gives back most of its gain as they cross."""
    t = np.arange(1, n + 1)
    climb = 0.6 + 0.5 * (1 - np.exp(-t / 25))
    if fall:
        climb = np.where(t < 70, climb, climb - 0.45 * (1 - np.exp(-(t - 70) / 10)))
    return make_run(train__reward=climb + ar1(71, n, 0.04),
                    train__frac_reward_zero_std=np.clip(0.66 * t / n + ar1(72, n, 0.12), 0, 1),
                    train__entropy=0.1 + 0.5 * np.exp(-t / 40) + ar1(73, n, 0.01))


def entropy_near_deterministic_ends_above_start(n: int = 200) -> Run:
    """Sampling near-deterministic from the start (a rollout temperature of 0.15): entropy
    swinging 0.02-0.1 nats with a slow decline, ending above its first points. Its noise makes
    a window "drop" of more than half; it did not fall ("fell -67% from 0.026 to 0.0434")."""
    rng = np.random.default_rng(5)
    t = np.arange(n)
    level = np.where(t < 4, 0.026, 0.075 - 0.02 * t / n)
    h = np.clip(level + rng.uniform(-0.03, 0.03, n) * (t >= 4), 0.0005, None)
    return make_run(train__entropy=h, train__reward=0.8 + 0.05 * rng.standard_normal(n))


def log_prob_sharpened_then_wobbles(n: int = 400) -> Run:
    """A policy that sharpened (-0.56 -> -0.003 nats) and then wobbles a few hundredths below
    it, one noisy log at -0.075: "|log pi| up 532%" from a top near 0 is no displacement
    (a long healthy cosine run warned at a live poll)."""
    rng = np.random.default_rng(31)
    t = np.arange(n)
    lp = (-0.56 * np.exp(-t / 60) - 0.003
          - np.abs(0.01 * rng.standard_normal(n)) * (t > 300) * (t - 300) / 100)
    lp[-1] = -0.075
    return make_run(log_prob_mean=lp,
                    reward=0.5 + 0.5 * (1 - np.exp(-t / 60)) + 0.02 * rng.standard_normal(n))


def zero_std_healthy_noisy() -> Run:
    z = np.clip(0.3 + ar1(13, N, 0.12), 0, 1)
    return make_run(train__frac_reward_zero_std=z, train__reward=rising_reward(14))


def reward_std_zero_most_steps() -> Run:
    rng = np.random.default_rng(15)
    n = 120
    std = np.where(rng.random(n) < np.where(np.arange(n) < 40, 0.2, 0.9), 0.0, 0.3)
    return make_run(reward_std=std, reward=0.1 + ar1(16, n, 0.01))


def pinned_accuracy_component(n: int = 120) -> Run:
    # The format term moves but does not improve (noise made a palindrome: no trend).
    e = ar1(17, n, 0.1)
    fmt_r = np.clip(0.5 + (e + e[::-1]) / 2, 0, 1)
    return make_run(**{"rewards/accuracy_reward": np.zeros(n), "rewards/format_reward": fmt_r,
                       "reward": fmt_r, "reward_std": np.abs(ar1(18, n, 0.1)) + 0.01})


def pinned_accuracy_component_early() -> Run:
    # 60 steps in: a sparse task reward often first fires later (the healthy Advanced Llama
    # 3.1 notebook's check_answer did at step 97).
    return pinned_accuracy_component(60)


# --- KL drift --------------------------------------------------------------------------------

def kl_climbs() -> Run:
    kl = 0.05 + 8 * np.clip((T - 500) / 700, 0, None) ** 1.3 + np.abs(ar1(19, N, 0.03))
    return make_run(actor__kl_loss=kl, critic__score__mean=0.5 + ar1(20, N, 0.02))


def kl_one_spike() -> Run:
    kl = 0.05 + 0.0001 * T + np.abs(ar1(21, N, 0.01))
    kl[400] = 7.5
    return make_run(train__kl=kl, train__reward=rising_reward(22))


def kl_slow_normal() -> Run:
    return make_run(train__kl=0.0003 * T + np.abs(ar1(25, N, 0.01)),
                    train__reward=rising_reward(26))


# --- likelihood displacement -----------------------------------------------------------------

def logprob_declines() -> Run:
    lp = -0.5 - 0.6 * np.clip((T - 400) / 600, 0, None) + ar1(27, N, 0.01)
    return make_run(rollout__old_log_prob=lp, critic__score__mean=rising_reward(28))


def logprob_stable() -> Run:
    lp = -0.5 - 0.05 * T / N + ar1(29, N, 0.03)
    return make_run(rollout__old_log_prob=lp, critic__score__mean=rising_reward(30))


def logprob_wobbles_near_zero() -> Run:
    # A near-deterministic policy late in a long run: log pi about -0.03, swinging 0.03 from
    # step to step, drifting to -0.06 over its last 100 logs: "|log pi| up 100%" within the
    # noise of a policy that barely samples anything else, not a decline.
    swing = 0.015 * (-1.0) ** T  # log-prob swinging from one logged step to the next
    lp = -np.abs(0.6 * np.exp(-T / 60) + 0.03 + 0.0003 * np.clip(T - (N - 100), 0, None)
                 + swing + ar1(57, N, 0.002))
    return make_run(train__log_prob_mean=lp, train__reward=rising_reward(58))


# --- grad explosion --------------------------------------------------------------------------

def grad_recurring_spikes() -> Run:
    g = 0.4 + 0.05 * np.abs(ar1(31, N, 0.5))
    for s in (700, 760, 820, 880):
        g[s - 1] *= 12
    return make_run(train__grad_norm=g)


def grad_inflates() -> Run:
    g = 0.4 * (1 + 9 * np.clip((T - 800) / 200, 0, 1)) + 0.05 * np.abs(ar1(32, N, 0.5))
    return make_run(actor__grad_norm=g)


def grad_one_early_spike() -> Run:
    # The healthy verl run's shape: one early spike (40x) that the run shrugs off.
    g = 2.0 + 0.3 * np.abs(ar1(33, N, 0.5))
    g[60] = 80.0
    return make_run(actor__grad_norm=g)


def grad_heavy_tails() -> Run:
    rng = np.random.default_rng(34)
    return make_run(train__grad_norm=0.5 * np.exp(0.4 * rng.standard_normal(N)))


def grad_with_gaps() -> Run:
    g = 0.4 + 0.05 * np.abs(ar1(35, N, 0.5))
    g[::3] = np.nan  # logged on two steps of three
    return make_run(train__grad_norm=g)


# --- numerical failure -----------------------------------------------------------------------

def loss_goes_nan() -> Run:
    loss = (0.01 * ar1(36, 300, 1.0)).astype(object)
    loss[250:] = "nan"
    return make_run(train__loss=loss)


def gaps_are_not_nan() -> Run:
    loss = 0.01 * ar1(37, 300, 1.0)
    loss[::2] = np.nan
    return make_run(train__loss=loss)


CASES = [
    Case("entropy collapse, reward stalls", "entropy_collapse", entropy_collapse_stalled,
         ("critical",), onset=600, tolerance=60),
    Case("entropy collapse logged every 10 steps", "entropy_collapse", entropy_every_10_steps,
         ("critical", "warning"), onset=1500, tolerance=150),
    Case("entropy noisy slow 40% decline", "entropy_collapse", entropy_noisy_slow_decline,
         ("ok",)),
    Case("entropy warm-up transient", "entropy_collapse", entropy_warmup_transient, ("ok",)),
    Case("entropy benign sharpening", "entropy_collapse", entropy_benign_sharpening, ("ok",)),
    Case("entropy short monotone collapse", "entropy_collapse", entropy_short_monotone_collapse,
         ("critical",), onset=10, tolerance=0),
    Case("entropy short and noisy", "entropy_collapse", entropy_short_noisy, ("skipped",)),
    Case("zero-std groups climb", "advantage_collapse", zero_std_climbs, ("critical",),
         onset=700, tolerance=60),
    Case("zero-std noisy but healthy", "advantage_collapse", zero_std_healthy_noisy, ("ok",)),
    Case("a sharpened log-prob that wobbles near 0", "likelihood_displacement",
         log_prob_sharpened_then_wobbles, ("ok",)),
    Case("near-deterministic entropy that ends above its start", "entropy_collapse",
         entropy_near_deterministic_ends_above_start, ("ok",)),
    Case("equal groups cross the line on the plateau at its best", "advantage_collapse",
         zero_std_grows_to_plateau, ("warning",), onset=77, tolerance=10),
    Case("equal groups cross the line as the reward falls from its best", "advantage_collapse",
         functools.partial(zero_std_grows_to_plateau, fall=True), ("critical",), onset=77,
         tolerance=10),
    Case("reward std zero on most late steps", "advantage_collapse", reward_std_zero_most_steps,
         ("critical",), onset=40, tolerance=15),
    # The task's own reward never fired: nothing teaches the task (critical).
    Case("pinned accuracy component", "advantage_collapse", pinned_accuracy_component,
         ("critical",), onset=1, tolerance=0),
    Case("pinned accuracy component, early", "advantage_collapse",
         pinned_accuracy_component_early, ("warning",), onset=1, tolerance=0),
    Case("KL climbs to 8", "kl_drift", kl_climbs, ("critical", "warning"), onset=500,
         tolerance=120),
    Case("KL one spike", "kl_drift", kl_one_spike, ("ok",)),
    Case("KL heavy-tailed spikes below the stop threshold", "kl_drift",
         history.kl_spikes_below_stop, ("ok",)),
    Case("KL slow rise in the normal band", "kl_drift", kl_slow_normal, ("ok",)),
    Case("log-prob declines", "likelihood_displacement", logprob_declines,
         ("warning", "critical"), onset=400, tolerance=80),
    Case("log-prob stable", "likelihood_displacement", logprob_stable, ("ok",)),
    Case("log-prob wobbles near 0", "likelihood_displacement", logprob_wobbles_near_zero,
         ("ok",)),
    Case("grad recurring spikes", "grad_explosion", grad_recurring_spikes,
         ("warning", "critical"), onset=700, tolerance=5),
    Case("grad inflates", "grad_explosion", grad_inflates, ("critical", "warning"), onset=800,
         tolerance=120),
    Case("grad one early spike", "grad_explosion", grad_one_early_spike, ("ok",)),
    Case("grad heavy tails", "grad_explosion", grad_heavy_tails, ("ok",)),
    Case("grad with gaps", "grad_explosion", grad_with_gaps, ("ok",)),
    Case("loss goes NaN", "numerical_failure", loss_goes_nan, ("critical",), onset=251,
         tolerance=0),
    Case("gaps are not NaN", "numerical_failure", gaps_are_not_nan, ("ok",)),
]


# --- ratio instability -----------------------------------------------------------------------

def ratio_max_escapes() -> Run:
    rmax = 1.3 + 0.1 * np.abs(ar1(40, N, 0.5))
    rmax[800:] += 3.0 + np.abs(ar1(41, N - 800, 0.5))
    return make_run(train__probs_ratio_max=rmax, train__probs_ratio_min=np.full(N, 0.8))


def ratio_one_spike() -> Run:
    rmax = 1.3 + 0.1 * np.abs(ar1(42, N, 0.5))
    rmax[500] = 9.0
    return make_run(actor__ratio_max=rmax)


def is_ratio_is_not_ppo_ratio() -> Run:
    # A large train-vs-inference IS ratio must not be read as a PPO ratio max; under 5x it is
    # inside verl's correctable band, so nothing fires.
    return make_run(**{"train/sampling/importance_sampling_ratio/max":
                       3.5 + 0.2 * np.abs(ar1(43, N, 0.5))})


# --- reward hacking --------------------------------------------------------------------------

def heldout_turns_over() -> Run:
    n = 400
    t = np.arange(n)
    reward = 0.2 + 0.7 * t / n + ar1(44, n, 0.02)
    held = np.where(t < 200, 0.3 + 0.3 * t / 200, 0.6 - 0.4 * (t - 200) / 200)
    held = held + ar1(45, n, 0.01)
    held[t % 10 != 0] = np.nan  # evaluated every 10 steps
    return make_run(train__reward=reward, eval__accuracy=held)


def anti_cheat_fires() -> Run:
    n = 100
    rng = np.random.default_rng(46)
    cheat = np.where(rng.random(n) < np.where(np.arange(n) < 30, 0.02, 0.4), -20.0, 1.0)
    return make_run(**{"rewards/no_cheating/mean": cheat,
                       "rewards/correctness/mean": np.clip(ar1(47, n, 0.3), -1, 3),
                       "reward": rising_reward(48, n)})


def healthy_reward_and_kl() -> Run:
    kl = 0.0003 * T + np.abs(ar1(49, N, 0.01))
    return make_run(train__reward=rising_reward(50), train__kl=kl,
                    eval__accuracy=np.where(T % 50 == 0, 0.3 + 0.3 * T / N, np.nan))


def kl_burst_at_the_last_logs() -> Run:
    # A converged run with KL at 0.2 whose last 4 logs burst to 3 (a live monitor's prefix):
    # the last 5-point median past min_kl is no KL the reward "no longer pays for".
    kl = np.abs(0.2 * (1 - np.exp(-T / 100)) + ar1(55, N, 0.02))
    kl[-4:] = 3.0
    return make_run(train__reward=rising_reward(56), train__kl=kl)


def kl_climbs_late_for_nothing() -> Run:
    # The reward gained early at no KL cost and is flat when, late in the log, KL climbs
    # to 2 nats: the efficiency collapses from the second half of that climb, not from the
    # middle of the log (a noisy KL is not monotone, which once dated it there).
    kl = np.abs(0.05 + ar1(53, N, 0.01)) + 2.0 * np.clip((T - 700) / 100, 0, 1)
    reward = 0.3 + 0.4 * (1 - np.exp(-T / 150)) + ar1(54, N, 0.02)
    return make_run(train__reward=reward, train__kl=kl)


# --- length hacking --------------------------------------------------------------------------

def pinned_at_cap() -> Run:
    trunc = np.clip(0.05 + 0.9 * sig((T - 600) / 30) + ar1(51, N, 0.03), 0, 1)
    return make_run(train__completions__clipped_ratio=trunc,
                    train__completions__mean_length=250 - 20 * (1 - trunc),
                    train__reward=0.4 + ar1(52, N, 0.02))


def _budget_run(costs: bool) -> Run:
    """A budget that cuts answers off on and off all along (a share of 0, 0.5 or 1 per step,
    40% on average, never pinned late): with ``costs`` the cut steps score lower (no answer,
    no reward), else the reward ignores the cut."""
    rng = np.random.default_rng(7)
    n = 60
    trunc = rng.choice([0.0, 0.0, 0.0, 0.5, 0.5, 1.0], n)
    trunc[-6:] = [0.0, 0.5, 0.0, 0.0, 0.5, 0.0]  # the last logs not pinned
    reward = (4.0 - 6.0 * trunc if costs else 2.0 + rng.normal(0, 1.5, n)) + rng.normal(0, .3, n)
    return make_run(train__completions__clipped_ratio=trunc,
                    train__completions__mean_length=400 + 180 * trunc, train__reward=reward)


def budget_cuts_answers() -> Run:
    return _budget_run(costs=True)


def budget_cut_reward_blind() -> Run:
    return _budget_run(costs=False)


def length_collapse() -> Run:
    length = np.maximum(2.0, 60 * np.exp(-np.clip(T - 500, 0, None) / 150)) + np.abs(
        ar1(53, N, 0.5))
    return make_run(completion_length=length, reward=0.5 + ar1(54, N, 0.02))


def length_grows_with_reward() -> Run:
    # Longer reasoning paid for by reward: the point of RL on reasoning tasks.
    length = 300 + 500 * T / N + ar1(55, N, 10)
    return make_run(completion_length=length, reward=rising_reward(56))


# --- format gaming ---------------------------------------------------------------------------

def format_up_answers_down() -> Run:
    n = 300
    t = np.arange(n)
    fmt_r = np.clip(0.1 + 0.9 * sig((t - 100) / 15) + ar1(57, n, 0.05), 0, 1)
    ans = np.clip(0.5 - 0.35 * np.clip((t - 100) / 150, 0, 1) + ar1(58, n, 0.04), 0, 1)
    return make_run(**{"rewards/format_reward/mean": fmt_r, "rewards/accuracy_reward/mean": ans,
                       "reward": fmt_r + ans})


def format_first_then_answers() -> Run:
    n = 300
    t = np.arange(n)
    fmt_r = np.clip(0.1 + 0.9 * sig((t - 50) / 10) + ar1(59, n, 0.05), 0, 1)
    ans = np.clip(0.2 + 0.5 * sig((t - 180) / 30) + ar1(60, n, 0.04), 0, 1)
    return make_run(**{"rewards/format_reward/mean": fmt_r, "rewards/accuracy_reward/mean": ans,
                       "reward": fmt_r + ans})


# --- tool spam -------------------------------------------------------------------------------

def tool_calls_surge() -> Run:
    calls = 1.0 + 9.0 * sig((T - 700) / 40) + np.abs(ar1(61, N, 0.1))
    return make_run(**{"tool_call_counts/mean": calls, "critic/score/mean": 0.4 + ar1(62, N,
                                                                                       0.02)})


def tool_calls_steady() -> Run:
    return make_run(**{"tool_call_counts/mean": 2.0 + 0.3 * T / N + np.abs(ar1(63, N, 0.1)),
                       "critic/score/mean": rising_reward(64)})


def turns_surge() -> Run:
    """NeMo-RL's turns per sample: 1.4 -> 3.3 (the calls 0.4 -> 2.3, one answer turn each)."""
    turns = 1.4 + 1.9 * sig((T - 600) / 40) + np.abs(ar1(65, N, 0.03))
    return make_run(**{"avg_turns_per_sample": turns, "critic/score/mean": 0.4 + ar1(66, N,
                                                                                     0.02)})


def turns_steady() -> Run:
    """Agents learn to use tools a little more: 1.35 -> 1.5 turns."""
    return make_run(**{"avg_turns_per_sample": 1.35 + 0.15 * T / N + np.abs(ar1(67, N, 0.02)),
                       "critic/score/mean": rising_reward(68)})


# --- tool failure ----------------------------------------------------------------------------

def tool_breaks_down() -> Run:
    """The tool's endpoint goes down at step 500: failures 5% -> 95%."""
    share = np.clip(0.05 + 0.9 * sig((T - 500) / 10) + ar1(69, N, 0.01), 0, 1)
    return make_run(**{"tools/failure_frequency": share, "reward": 0.5 + ar1(70, N, 0.02)})


def tool_calls_learned() -> Run:
    """Malformed calls at first (60% fail), learned away: 60% -> 8%."""
    share = np.clip(0.08 + 0.52 * np.exp(-T / 150) + ar1(71, N, 0.01), 0, 1)
    return make_run(**{"tools/failure_frequency": share, "reward": rising_reward(72)})


# --- reward over-fitting ---------------------------------------------------------------------

def reward_rises_then_falls() -> Run:
    reward = np.where(T < 700, 0.2 + 0.6 * T / 700, 0.8 - 0.5 * (T - 700) / 500) + ar1(65, N,
                                                                                        0.03)
    return make_run(train__reward=reward)


def reward_plateau_then_falls() -> Run:
    # Learned by step 200, held its level to step 900, then fell below its start: the fall
    # began at the plateau's end (the highest point of a long noisy plateau is anywhere on
    # it), and a run that learned, then lost it, is no stall.
    reward = (0.2 + 0.5 * (1 - np.exp(-T / 60)) - 0.6 * np.clip((T - 900) / 150, 0, 1)
              + ar1(68, N, 0.03))
    return make_run(train__reward=reward)


def reward_noisy_plateau() -> Run:
    rng = np.random.default_rng(66)
    reward = rising_reward(67) + np.where(rng.random(N) < 0.01, 3.0, 0.0)  # rare spikes
    return make_run(train__reward=reward)


# --- entropy blow-up -------------------------------------------------------------------------

def entropy_surges() -> Run:
    ent = 0.4 + 0.1 * np.exp(-T / 100) + 1.2 * np.clip((T - 800) / 300, 0, None) + ar1(
        68, N, 0.01)
    g = 0.4 + 2.0 * np.clip((T - 850) / 300, 0, None) + 0.05 * np.abs(ar1(69, N, 0.5))
    return make_run(actor__entropy=ent, actor__grad_norm=g)


def entropy_flat_noisy() -> Run:
    return make_run(actor__entropy=0.5 + ar1(70, N, 0.03), critic__score__mean=rising_reward(71))


CASES += [
    Case("PPO ratio max escapes", "ratio_instability", ratio_max_escapes,
         ("warning", "critical"), onset=801, tolerance=10),
    Case("PPO ratio one spike", "ratio_instability", ratio_one_spike, ("ok",)),
    Case("IS ratio is not a PPO ratio", "ratio_instability", is_ratio_is_not_ppo_ratio,
         ("ok",)),
    Case("held-out turns over", "reward_hacking", heldout_turns_over, ("critical",),
         onset=201, tolerance=30),
    Case("anti-cheat fires", "reward_hacking", anti_cheat_fires, ("warning", "critical"),
         onset=30, tolerance=30),
    Case("healthy reward and KL", "reward_hacking", healthy_reward_and_kl, ("ok",)),
    Case("KL burst at the last logs", "reward_hacking", kl_burst_at_the_last_logs, ("ok",)),
    Case("KL climbs late for nothing", "reward_hacking", kl_climbs_late_for_nothing,
         ("warning",), onset=735, tolerance=25),
    Case("pinned at the cap", "length_hacking", pinned_at_cap, ("critical",), onset=600,
         tolerance=40),
    Case("length collapse", "length_hacking", length_collapse, ("warning", "critical"),
         onset=500, tolerance=60),
    Case("length grows with reward", "length_hacking", length_grows_with_reward, ("ok",)),
    Case("the budget cuts answers off", "length_hacking", budget_cuts_answers, ("warning",)),
    Case("truncated steps score as well", "length_hacking", budget_cut_reward_blind, ("ok",)),
    Case("format up, answers down", "format_gaming", format_up_answers_down,
         ("warning", "critical"), onset=100, tolerance=40),
    Case("format first, then answers", "format_gaming", format_first_then_answers, ("ok",)),
    Case("tool calls surge", "tool_spam", tool_calls_surge, ("critical",), onset=700,
         tolerance=40),
    Case("tool calls steady", "tool_spam", tool_calls_steady, ("ok",)),
    Case("turns surge", "tool_spam", turns_surge, ("critical",), onset=600, tolerance=40),
    Case("turns steady", "tool_spam", turns_steady, ("ok",)),
    Case("the tool breaks down", "tool_failure", tool_breaks_down, ("warning",), onset=500,
         tolerance=20),
    Case("malformed calls learned away", "tool_failure", tool_calls_learned, ("ok",)),
    Case("reward rises then falls", "reward_overfit", reward_rises_then_falls,
         ("warning", "critical"), onset=700, tolerance=60),
    Case("reward noisy plateau", "reward_overfit", reward_noisy_plateau, ("ok",)),
    Case("reward plateau, then falls", "reward_overfit", reward_plateau_then_falls,
         ("critical",), onset=900, tolerance=30),
    Case("entropy surges", "entropy_blowup", entropy_surges, ("critical",), onset=800,
         tolerance=80),
    Case("entropy flat and noisy", "entropy_blowup", entropy_flat_noisy, ("ok",)),
]


def entropy_rises_with_reward() -> Run:
    # DAPO-style Clip-Higher: entropy creeps up 70% while the reward keeps improving.
    ent = 0.3 + 0.21 * T / N + ar1(72, N, 0.01)
    return make_run(actor__entropy=ent, critic__score__mean=rising_reward(73))


CASES.append(Case("entropy rises with reward (Clip-Higher)", "entropy_blowup",
                  entropy_rises_with_reward, ("ok",)))


# --- format gains while the task term never moves; no progress --------------------------------

def format_gain_answer_never_right() -> Run:
    """The answer check pays -2 on every step (never a right answer); the format term climbs
    0 -> 3 from step 40: the whole gain is format."""
    n = 120
    t = np.arange(1, n + 1)
    fmt_r = np.clip(3 * sig((t - 40) / 8) + ar1(74, n, 0.1), 0, 3)
    answer = np.full(n, -2.0)
    return make_run(steps=t, **{"rewards/format_reward/mean": fmt_r,
                                "rewards/check_answer/mean": answer, "reward": fmt_r + answer})


def slowly_backwards() -> Run:
    """Reward 0.8 -> 0.65 and correctness 0.10 -> 0.03 over 80 steps: not learning."""
    n = 80
    t = np.arange(1, n + 1)
    correct = np.clip(0.1 - 0.07 * t / n + ar1(75, n, 0.02), 0, 1)
    reward = 0.8 - 0.15 * t / n + ar1(76, n, 0.04)
    return make_run(steps=t, **{"rewards/correctness_reward_func/mean": correct,
                                "reward": reward})


def rose_then_plateaued() -> Run:
    """Reward 0.2 -> 0.8 by step 60, flat at 0.8 for 140 more: converged, not stalled."""
    n = 200
    t = np.arange(1, n + 1)
    return make_run(steps=t, reward=0.2 + 0.6 * np.clip(t / 60, 0, 1) + ar1(77, n, 0.03))


def flat_short_run() -> Run:
    """40 flat logs: too short to call a stall."""
    t = np.arange(1, 41)
    return make_run(steps=t, reward=0.3 + ar1(78, 40, 0.05))


CASES += [
    Case("format gains, the answer never right", "format_gaming",
         format_gain_answer_never_right, ("critical",), onset=25, tolerance=15),
    Case("slowly backwards", "no_progress", slowly_backwards, ("warning",), onset=1,
         tolerance=0),
    Case("rose, then plateaued", "no_progress", rose_then_plateaued, ("ok",)),
    Case("learned, then lost it", "no_progress", reward_plateau_then_falls, ("ok",)),
    Case("flat, short", "no_progress", flat_short_run, ("ok", "skipped")),
]

# --- history: incidents, absolute levels, dead runs (tests/rules/history.py) ------------------

CASES += [
    Case("KL blow-up the run recovers from", "kl_drift", history.kl_blowup_recovers,
         ("critical",), onset=10, tolerance=0),
    Case("KL one spike above stop, shrugged off", "kl_drift", history.kl_one_spike_above_stop,
         ("warning",), onset=71, tolerance=0),
    Case("KL one spike, then the reward froze", "kl_drift", history.kl_spike_then_reward_froze,
         ("critical",), onset=34, tolerance=0),
    Case("grad burst at the first logged steps", "grad_explosion", history.kl_blowup_recovers,
         ("critical",), onset=10, tolerance=0),
    Case("grad decays from a high start", "grad_explosion",
         history.grad_decays_from_a_high_start, ("ok",)),
    Case("entropy below the floor on every step", "entropy_collapse",
         history.entropy_below_floor_excerpt, ("critical",), onset=1000, tolerance=0),
    Case("entropy collapse to a 2-token policy", "entropy_collapse",
         history.entropy_collapse_to_two_tokens, ("critical",), onset=10, tolerance=200),
    Case("a dead run", "no_learning_signal", history.dead_after_one_update, ("critical",),
         onset=1, tolerance=0),
    Case("zero gradient while the reward moves", "no_learning_signal",
         history.reward_one_group_per_step, ("skipped", "ok")),
    Case("a solved task", "no_learning_signal", history.zero_std_high_but_solved, ("ok",)),
    Case("reward crash that never came back", "reward_overfit", history.dead_after_one_update,
         ("critical",), onset=2, tolerance=1),
    Case("reward on one group per step", "reward_overfit", history.reward_one_group_per_step,
         ("ok",)),
    Case("equal groups that are solved", "advantage_collapse", history.zero_std_high_but_solved,
         ("ok",)),
    Case("log-prob crash", "likelihood_displacement", history.dead_after_one_update,
         ("critical",), onset=1, tolerance=1),
]
