"""Curves shaped like the runs that the end-of-log trends misread (issue 12), as data.

Each builder reproduces one pattern seen in real runs: an incident the run came back from, a
collapse older than the log, convergence the evidence contradicts, a dead run, a log too short
to judge, a signal under a name nobody maps, a warm-up that overshoots. ``tests/rules/cases.py``
runs the rule-level ones through the harness; ``tests/test_verdict.py`` checks the diagnosis
(status, root cause, plan) on all of them.
"""

from __future__ import annotations

import numpy as np

from grpo_doctor.store import Run
from tests.helpers import ar1, make_run


def kl_blowup_recovers() -> Run:
    """KL 10,833 at the first logged step (10), above 10 for six logged points, decaying to
    0.04 by step 150; the grad norm 421k, 100k, 10k, 35k at the first four."""
    steps = np.arange(10, 310, 10)
    kl = np.concatenate([[10_833, 2_400, 310, 80, 31, 12.5], 9.0 * 0.45 ** np.arange(1, 25)])
    kl = np.maximum(kl, 0.04) + np.abs(ar1(40, len(steps), 0.005))
    grad = 288 + 20 * np.abs(ar1(41, len(steps), 1.0))
    grad[:4] = [421_000, 100_000, 10_000, 35_000]
    reward = 0.3 + 0.3 * np.clip((steps - 60) / 200, 0, 1) + ar1(42, len(steps), 0.02)
    return make_run(steps=steps, train__kl=kl, train__grad_norm=grad, train__reward=reward)


def kl_one_spike_above_stop() -> Run:
    """One step at KL 17.8 (median 0.09) and grad norm 155, back the next step; nothing
    followed (the real gate2 run)."""
    n = 200
    kl = 0.09 + np.abs(ar1(43, n, 0.01))
    kl[70] = 17.8
    grad = 0.13 + np.abs(ar1(44, n, 0.02))
    grad[70] = 155.0
    reward = 0.45 + ar1(45, n, 0.1)
    return make_run(train__kl=kl, train__grad_norm=grad, train__reward=reward)


def kl_spike_then_reward_froze() -> Run:
    """A single KL spike to 29 at step 34, after which the reward froze and 95% of groups had
    equal rewards."""
    n = 120
    kl = 0.05 + np.abs(ar1(46, n, 0.01))
    kl[33] = 29.0
    reward = 0.4 + 0.1 * np.arange(n) / n + ar1(47, n, 0.03)
    reward[34:] = 0.25
    zsf = np.clip(0.3 + ar1(48, n, 0.05), 0, 1)
    zsf[34:] = 0.95
    return make_run(train__kl=kl, train__reward=reward, train__frac_reward_zero_std=zsf)


def entropy_below_floor_excerpt() -> Run:
    """17 steps of a PPO log whose entropy is 0.003-0.008 nats on every step: the policy emits
    one fixed template; the fall happened before the excerpt."""
    steps = np.arange(1000, 1017)
    ent = 0.0055 + 0.0025 * np.sin(np.arange(17))
    reward = 0.31 + ar1(49, 17, 0.01)
    return make_run(steps=steps, actor__entropy=ent, critic__score__mean=reward)


def entropy_collapse_to_two_tokens() -> Run:
    """Entropy 0.96 -> 0.004 over 49 logs every 10 steps, completions 53 -> 2 tokens, zero-std
    groups 0.4 -> 1.0, while the reward still moves up."""
    steps = np.arange(10, 500, 10)
    x = np.linspace(0, 1, len(steps))
    ent = 0.96 * np.exp(-5.5 * x) + 0.0001
    length = 53 * np.exp(-3.3 * x)
    zsf = np.clip(0.4 + 0.6 * x ** 0.5, 0, 1)
    reward = 0.2 + 0.3 * x + ar1(50, len(steps), 0.01)
    return make_run(steps=steps, train__entropy=ent, train__completions__mean_length=length,
                    train__frac_reward_zero_std=zsf, train__reward=reward)


def dead_after_one_update() -> Run:
    """lr 3e-3, beta 0: the reward goes to exactly 0 at step 2 and stays there; grad norm and
    loss are 0 for 299 steps; the answer log-prob falls from -1.2 to -15 in four steps;
    completions pinned at the cap, every group equal."""
    n = 300
    reward = np.zeros(n)
    reward[0] = 0.375
    grad = np.zeros(n)
    grad[0] = 0.8
    loss = np.zeros(n)
    loss[0] = 0.02
    logp = np.full(n, -15.0)
    logp[:5] = [-1.2, -4.0, -8.5, -12.0, -15.0]
    length = np.full(n, 512.0)
    length[0] = 230.0
    zsf = np.ones(n)
    zsf[0] = 0.6
    lr = np.full(n, 3e-3)
    return make_run(train__reward=reward, train__grad_norm=grad, train__loss=loss,
                    train__log_prob_mean=logp, train__completions__mean_length=length,
                    train__completions__clipped_ratio=(length >= 512).astype(float),
                    train__frac_reward_zero_std=zsf, train__learning_rate=lr)


def one_step_snippet() -> Run:
    """One logged step from a bug report: every group equal, loss 0, grad norm 0."""
    return make_run(steps=np.array([34]), train__frac_reward_zero_std=np.array([1.0]),
                    train__loss=np.array([0.0]), train__grad_norm=np.array([0.0]),
                    train__reward=np.array([0.0]))


def unmapped_logprob() -> Run:
    """A reward and an answer log-prob under a name no framework uses."""
    n = 300
    reward = 0.3 + 0.2 * np.clip(np.arange(n) / 200, 0, 1) + ar1(51, n, 0.02)
    logp = -0.8 - 0.5 * np.clip((np.arange(n) - 100) / 150, 0, 1) + ar1(52, n, 0.01)
    kl = 0.02 + 0.001 * np.arange(n) / n + np.abs(ar1(53, n, 0.002))
    return make_run(train__reward=reward, train__kl=kl, probe__answer_logprob=logp)


def warmup_overshoot() -> Run:
    """lr warms up linearly to 1.2e-3 over 1,200 steps; the reward rises for ~380 steps and
    peaks where the lr was ~3.8e-4, then entropy collapses and the reward falls."""
    n = 1200
    t = np.arange(1, n + 1)
    lr = 1.2e-3 * t / n
    peak = 381
    reward = np.where(t <= peak, 0.2 + 0.5 * t / peak, 0.7 - 0.5 * np.clip((t - peak) / 300, 0, 1))
    reward = reward + ar1(54, n, 0.02)
    ent = np.where(t <= peak, 1.0 - 0.3 * t / peak,
                   0.7 * np.exp(-3.0 * np.clip((t - peak) / 300, 0, None))) + 0.005
    grad = 0.5 + 0.3 * np.clip((t - peak) / 200, 0, None) + np.abs(ar1(55, n, 0.05))
    return make_run(train__reward=reward, train__entropy=ent, train__learning_rate=lr,
                    train__grad_norm=grad)


# --- quiet counterparts --------------------------------------------------------------------------

def kl_spikes_below_stop() -> Run:
    """Heavy-tailed KL spikes that never reach the stop threshold."""
    rng = np.random.default_rng(23)
    kl = np.minimum(0.1 * np.exp(rng.standard_t(2, 1200) * 0.3), 8.0)
    return make_run(train__kl=kl, train__reward=0.3 + ar1(24, 1200, 0.02))


def grad_decays_from_a_high_start() -> Run:
    """A grad norm decaying smoothly 30x over the first fifth of the run: not a burst."""
    n = 500
    g = 0.3 + 9.0 * np.exp(-np.arange(n) / 30) + 0.02 * np.abs(ar1(56, n, 1.0))
    return make_run(train__grad_norm=g)


def reward_one_group_per_step() -> Run:
    """A reward scored on one group per step: it swings between its extremes by chance while
    its mean slowly rises (no crash)."""
    n = 250
    rng = np.random.default_rng(57)
    p = 0.2 + 0.5 * np.arange(n) / n
    reward = np.where(rng.random(n) < p, 2.5, -0.5) + rng.normal(0, 0.1, n)
    return make_run(train__reward=reward)


def zero_std_high_but_solved() -> Run:
    """Most groups have equal rewards because they are all-correct: a 0/1 reward at ~0.94 with
    88% equal groups, and so a grad norm of 0 on most steps (the healthy real run of this
    shape)."""
    n = 40
    reward = np.clip(0.93 + ar1(58, n, 0.03), 0, 1)
    zsf = np.clip(0.88 + ar1(59, n, 0.05), 0, 1)
    grad = np.where(np.arange(n) % 4 == 0, 0.2 + np.abs(ar1(60, n, 0.05)), 0.0)
    return make_run(steps=np.arange(5, 5 * n + 1, 5), train__reward=reward,
                    train__frac_reward_zero_std=zsf, train__grad_norm=grad,
                    train__entropy=0.13 * np.exp(-np.arange(n) / 40) + 0.02)
