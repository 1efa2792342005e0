"""The table is the contract (issue 23 item 4).

The "What it detects" table of docs/failure-modes.md states, per failure mode, when a check
warns and when it is critical. Every threshold it states is what the code applies: for each
one, a synthetic run just past it (the check gives at least that status) and one just short
of it (the check gives less). The curves are built from the number read off the table, and
that number must be the rule's parameter default: a change to the table without the code, or
to the code without the table, fails here. A level criterion ("entropy < 10% of its start")
is tested on a curve no trend test calls significant; a trend test decides only where the
table says "significant" (tested on a clearly significant curve against one that is not).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pytest

from grpo_doctor.config import DoctorConfig
from grpo_doctor.engine import diagnose
from grpo_doctor.findings import Check, Status
from grpo_doctor.rules import RULES, rule_named
from grpo_doctor.store import Run
from tests.helpers import REPO, ar1, make_run

TABLE = REPO / "docs" / "failure-modes.md"
LEVELS = ("warning", "critical")


def read_table() -> dict[str, dict[str, str]]:
    """mode -> {column: cell} of the table under "## The failure modes"."""
    text = TABLE.read_text(encoding="utf-8").split("## The failure modes", 1)[1]
    text = text.split("\n## ", 1)[0]
    rows = [line for line in text.splitlines() if line.startswith("|")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    out: dict[str, dict[str, str]] = {}
    for line in rows[2:]:  # after the header and its |---| line
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        row = dict(zip(header, cells))
        out[row["mode"].strip("`")] = row
    return out


# --- what a threshold is -----------------------------------------------------------------

Default = Callable[[Mapping[str, float]], float]


def param(name: str, scale: float = 1.0) -> Default:
    """The rule parameter a number of the table is the default of (``scale``: what the
    table's unit is in the parameter's: 0.01 for a percent)."""
    return lambda p: p[name] / scale


@dataclass(frozen=True)
class Threshold:
    """One threshold of a cell: the words that state it (a regex whose groups are its
    numbers), what each number is in the rule, and a run (built from the table's numbers)
    just past it or just short of it."""

    mode: str
    level: str
    name: str
    phrase: str
    build: Callable[[tuple[float, ...], bool], Run]
    defaults: tuple[Default | None, ...] = ()  # one per group of the phrase
    short_skips: bool = False  # just short of a minimum of points: the check may skip
    # Just short, the same status from a lower band of the cell, said in these words (just
    # short of KL 5 "dangerous" is 4x its early level: "drifting")
    short_words: str | None = None

    @property
    def id(self) -> str:
        return f"{self.mode}-{self.level}-{self.name}"

    def numbers(self, cell: str) -> tuple[float, ...]:
        m = re.search(self.phrase, cell)
        assert m, f"{self.id}: the table no longer says {self.phrase!r}: {cell!r}"
        return tuple(WORDS.get(g) or float(g.replace(",", "")) for g in m.groups())


#: Numbers the table writes as words.
WORDS = {"a quarter": 0.25, "half": 0.5, "a third": 1 / 3}


def status_of(run: Run, mode: str) -> Check:
    """The check of ``mode`` as diagnose gives it (the first alert is not needed here)."""
    return diagnose(run, DoctorConfig(select=(mode,)), with_first_alert=False).check(mode)


# --- curve builders ----------------------------------------------------------------------


def ramp(n: int, a: float, b: float, start: float, end: float) -> np.ndarray:
    """``a`` up to index ``start``, straight to ``b`` at ``end``, ``b`` after."""
    t = np.arange(n, dtype=float)
    return a + (b - a) * np.clip((t - start) / max(end - start, 1e-9), 0, 1)


def flat(n: int, level: float, seed: int, sigma: float = 0.01) -> np.ndarray:
    """A level with AR(1) noise (for a reward that must not improve, see ``stalled``)."""
    return level + ar1(seed, n, sigma)


def stalled(n: int, seed: int, level: float = 0.5, sigma: float = 0.02) -> np.ndarray:
    """A reward that neither improves nor declines: AR(1) noise made a palindrome, so its
    first and last stretches hold the same values and its Mann-Kendall S is exactly 0."""
    e = ar1(seed, n, sigma)
    return level + (e + e[::-1]) / 2


def rising(n: int, seed: int, a: float = 0.2, b: float = 0.8, sigma: float = 0.02
           ) -> np.ndarray:
    """A reward that keeps improving to the end."""
    return ramp(n, a, b, 0, n - 1) + ar1(seed, n, sigma)


def falling(n: int, seed: int, a: float = 0.7, b: float = 0.3, sigma: float = 0.02
            ) -> np.ndarray:
    """A reward falling steadily to the end."""
    return ramp(n, a, b, 0, n - 1) + ar1(seed, n, sigma)


def nan_at(n: int, at: int) -> np.ndarray:
    """A loss logged as NaN from index ``at`` on (a logged NaN, not a gap)."""
    loss = (0.1 + 0.01 * ar1(90, n, 1.0)).astype(object)
    loss[at:] = "nan"
    return loss


def pick(past: bool, past_value: float, short_value: float) -> float:
    """The value of the run just past the threshold, or of the run just short of it."""
    return past_value if past else short_value


# --- entropy_collapse ----------------------------------------------------------------------

N_ENT = 1200


def _entropy_decline(lost: float, seed: int = 1, over: tuple[int, int] = (300, 800)
                     ) -> np.ndarray:
    """Entropy from 1.0, losing ``lost`` of it between the steps ``over``."""
    return ramp(N_ENT, 1.0, 1.0 - lost, *over) + ar1(seed, N_ENT, 0.01)


def ent_drop(nums, past):
    # Loses just over (or under) the table's share within 500 steps, the reward flat.
    lost = nums[0] / 100 + pick(past, 0.05, -0.05)
    return make_run(train__entropy=_entropy_decline(lost), train__reward=stalled(N_ENT, 2))


def ent_window(nums, past):
    # An exponential fall to 35% of the start loses the same share in every window: all of
    # it inside the table's window, or spread over twice it (41% per window).
    w = nums[1]
    span = pick(past, 0.9 * w, 2.0 * w)
    n = int(span) + 400
    t = np.arange(n)
    h = 0.35 ** (np.clip(t - 200, 0, span) / span) + ar1(3, n, 0.005)
    return make_run(train__entropy=h, train__reward=stalled(n, 4))


def ent_significant(nums, past):
    # The same 60% fall: for good (a significant decline), or there and back (no trend).
    h = _entropy_decline(0.6) if past else (
        ramp(N_ENT, 1.0, 0.4, 300, 600) + ramp(N_ENT, 0.0, 0.6, 600, 900) + ar1(5, N_ENT, 0.01))
    return make_run(train__entropy=h, train__reward=stalled(N_ENT, 2))


def ent_reward_paying(nums, past):
    # A 60% fall with the reward flat, or with the reward still rising (sharpening).
    reward = stalled(N_ENT, 2) if past else rising(N_ENT, 6)
    return make_run(train__entropy=_entropy_decline(0.6), train__reward=reward)


def _step_down(level: float, n: int = 120, seed: int = 7) -> np.ndarray:
    """Entropy at 1.0 over the first logs, then at ``level`` of it to the end: a fall no
    Mann-Kendall test calls significant (the autocorrelation correction sees one step)."""
    h = level + ar1(seed, n, 0.002)
    h[:6] = 1.0 + ar1(seed + 1, 6, 0.005)
    return h


def ent_ratio(nums, past):
    level = nums[0] / 100 * pick(past, 0.86, 1.2)
    return make_run(train__entropy=_step_down(level))


def ent_spent_improving(nums, past):
    # Below the line while the task still improves: a warning (nearly spent), not critical.
    level = nums[0] / 100 * pick(past, 0.86, 1.2)
    return make_run(train__entropy=_step_down(level), train__reward=rising(120, 8))


def ent_floor(nums, past):
    # At the floor from the first log on: no decline to see, a level.
    level = nums[0] * pick(past, 0.9, 1.2)
    return make_run(train__entropy=level * (1 + ar1(9, 200, 0.01)))


def _corroborated(**columns: np.ndarray) -> Run:
    return make_run(train__entropy=_entropy_decline(0.6), **columns)


def ent_reward_falling(nums, past):
    return _corroborated(train__reward=falling(N_ENT, 10) if past else stalled(N_ENT, 2))


def ent_zero_std(nums, past):
    # A level of equal-reward groups, not rising (just short, it even eases a little).
    z = nums[0] / 100
    share = np.full(N_ENT, z + 0.03) if past else ramp(N_ENT, z - 0.03, z - 0.06, 0, N_ENT)
    return _corroborated(train__frac_reward_zero_std=np.clip(share + ar1(11, N_ENT, 0.005), 0, 1))


def ent_zero_std_rising(nums, past):
    # Rising equal-reward groups past the share, with no reward logged to say the task improves.
    z = nums[0] / 100
    end = pick(past, z + 0.05, z - 0.05)
    share = ramp(N_ENT, 0.05, end, 300, 900) + ar1(12, N_ENT, 0.005)
    return _corroborated(train__frac_reward_zero_std=np.clip(share, 0, 1))


def ent_grad(nums, past):
    end = nums[0] / 100 * pick(past, 0.8, 1.5)
    return _corroborated(train__grad_norm=ramp(N_ENT, 1.0, end, 300, 900)
                         * (1 + ar1(13, N_ENT, 0.02)))


def ent_truncated(nums, past):
    share = nums[0] / 100 + pick(past, 0.05, -0.05)
    t = np.clip(ramp(N_ENT, 0.05, share, 300, 900) + ar1(14, N_ENT, 0.01), 0, 1)
    return _corroborated(train__completions__clipped_ratio=t)


def ent_shrunk_share(nums, past):
    # To 10 tokens or fewer (8), from a start just over or under 1/share of it.
    start = 8 / (nums[0] / 100) * pick(past, 1.1, 0.8)
    return _corroborated(train__completion_length=ramp(N_ENT, start, 8, 300, 900)
                         * (1 + ar1(15, N_ENT, 0.01)))


def ent_shrunk_tokens(nums, past):
    # To 25% of the start: just under or over the table's number of tokens.
    end = nums[1] + pick(past, -1, 1)
    return _corroborated(train__completion_length=ramp(N_ENT, 4 * end, end, 300, 900)
                         * (1 + ar1(16, N_ENT, 0.005)))


# --- advantage_collapse --------------------------------------------------------------------


def _zero_std(level: float, n: int = 100, seed: int = 20) -> np.ndarray:
    return np.clip(level + ar1(seed, n, 0.01), 0, 1)


def adv_share(nums, past):
    # The zero-std share alone (nothing to corroborate it or say the groups are solved).
    return make_run(train__frac_reward_zero_std=_zero_std(nums[0] / 100 + pick(past, 0.05, -0.05)))


def adv_late(nums, past):
    # Equal groups at 70% over the last stretch: longer than the table's window, or shorter.
    n, frac = 100, nums[0] / 100
    k = round(n * frac * pick(past, 1.25, 0.4))
    z = np.full(n, 0.2)
    z[-k:] = 0.7
    return make_run(train__frac_reward_zero_std=np.clip(z + ar1(21, n, 0.01), 0, 1))


def adv_solved(nums, past):
    # 60% equal groups with a 0/1 score at 0.95 proves most of them all-correct.
    n = 100
    score = flat(n, pick(past, 0.3, 0.95), 22, 0.005)
    return make_run(train__frac_reward_zero_std=_zero_std(0.6), train__reward=score)


def adv_rising(nums, past):
    # A reward on a scale of its own (not a 0/1 score) flat, or still rising.
    n = 30
    reward = stalled(n, 23, sigma=0.05) if past else rising(n, 24, -1.0, 2.0)
    return make_run(train__frac_reward_zero_std=_zero_std(0.6, n), train__reward=reward)


def adv_component(nums, past):
    # A penalty term constant over the whole log, few equal groups: with the reward stalled
    # (a warning), or rising on the other terms (they carry the signal).
    n = 60
    accuracy = np.clip(stalled(n, 25, 0.3, 0.05), 0, 1)
    penalty = np.full(n, -0.5)
    reward = accuracy + penalty + (0 if past else ramp(n, 0.0, 0.8, 0, n - 1))
    return make_run(**{"rewards/length_penalty": penalty, "rewards/accuracy_reward": accuracy,
                       "reward": reward, "frac_reward_zero_std": _zero_std(0.2, n)})


def adv_critical(nums, past):
    return make_run(train__frac_reward_zero_std=_zero_std(nums[0] / 100 + pick(past, 0.05, -0.05)))


def adv_heldout_solved(nums, past):
    # Over 50% equal groups with the reward flat over 60 points (critical), and a held-out
    # score (every 5th step) just under the table's level, or just over it (a warning).
    n = 60
    held = np.full(n, np.nan)
    held[::5] = flat(len(held[::5]), nums[0] * pick(past, 0.95, 1.05), 28, 0.002)
    return make_run(train__frac_reward_zero_std=_zero_std(0.6, n),
                    train__reward=stalled(n, 26, sigma=0.05), eval_accuracy=held)


def adv_stalled_points(nums, past):
    # Over 50% with the reward flat: critical from the table's number of points on.
    n = int(nums[1]) - (0 if past else 1)
    return make_run(train__frac_reward_zero_std=_zero_std(0.6, n),
                    train__reward=stalled(n, 26, sigma=0.05))


def adv_entropy(nums, past):
    # Over 50% with entropy down by more than half (significantly), or by 40%.
    n = 60
    lost = pick(past, 0.6, 0.4)
    return make_run(train__frac_reward_zero_std=_zero_std(0.6, n),
                    train__entropy=ramp(n, 1.0, 1.0 - lost, 0, n - 1) + ar1(27, n, 0.01))


def adv_steps_confident(nums, past):
    # One group per step (a reward std per step, 0 or not), the reward flat over 60 steps:
    # std 0 on 75% of steps (over the line with 95% confidence), or on 55% (a coin count).
    n = 60
    rng = np.random.default_rng(31)
    zero = rng.permutation(np.arange(n) < round(n * pick(past, 0.75, 0.55)))
    std = np.where(zero, 0.0, 0.3 + 0.05 * np.abs(ar1(32, n, 1.0)))
    return make_run(train__reward_std=std, train__reward=stalled(n, 33, sigma=0.05))


def adv_task_dead(nums, past):
    # Over 50% on a short log (no trend in the reward to judge): critical only when the
    # task's own term never moved.
    n = 30
    fmt = np.clip(0.5 + ar1(28, n, 0.05), 0, 1)
    accuracy = np.zeros(n) if past else np.clip(0.1 + ar1(29, n, 0.03), 0, 1)
    return make_run(**{"rewards/format_reward": fmt, "rewards/accuracy_reward": accuracy,
                       "frac_reward_zero_std": _zero_std(0.6, n)})


def adv_task_patience(nums, past):
    # Few equal groups (the format term varies), the reward stalled and the task's own term
    # 0 on every step: over the table's number of logged steps, or one fewer.
    n = int(nums[0]) - (0 if past else 1)
    fmt = np.clip(0.5 + ar1(30, n, 0.05), 0, 1)
    accuracy = np.zeros(n)
    return make_run(**{"rewards/format_reward": fmt, "rewards/accuracy_reward": accuracy,
                       "reward": fmt + accuracy, "frac_reward_zero_std": _zero_std(0.2, n)})


# --- kl_drift ------------------------------------------------------------------------------


def _kl_rise(end: float, n: int = 100, seed: int = 30) -> np.ndarray:
    # Multiplicative noise: a KL just under a line stays under it at every point.
    return ramp(n, 0.02, end, 10, 60) * (1 + ar1(seed, n, 0.005))


def kl_drift(nums, past):
    return make_run(train__kl=_kl_rise(nums[0] * pick(past, 1.1, 0.9)))


def kl_significant(nums, past):
    # Ending at 0.8 after a steady rise, or after a dip from 0.4 at the start (no trend).
    n = 100
    if past:
        kl = _kl_rise(0.8)
    else:
        kl = np.concatenate([np.full(20, 0.4), np.full(60, 0.05), np.full(20, 0.8)])
        kl = kl * (1 + ar1(31, n, 0.01))
    return make_run(train__kl=kl)


def kl_offset(nums, past):
    # KL at the line from step 1, flat: policy and reference differ from the start.
    return make_run(train__kl=nums[0] * pick(past, 1.1, 0.9) * (1 + ar1(32, 100, 0.01)))


def kl_band(nums, past):
    # Sustained in the band with no trend (a dip from 0.3 to 0.02, then the level): just
    # past 5 the danger band; just short, the drifting band (4x its early level).
    level = nums[0] * pick(past, 1.1, 0.9)
    kl = np.concatenate([np.full(20, 0.3), np.full(60, 0.02), np.full(20, level)])
    return make_run(train__kl=kl * (1 + ar1(33, 100, 0.005)))


def kl_fourfold(nums, past):
    # No trend (a dip from the early level to 0.02, then the level), the level past 0.5:
    # 4x its early level or more has risen; just short of 4x, it has not.
    early = 0.15
    level = early * nums[0] * pick(past, 1.1, 0.9)
    kl = np.concatenate([np.full(20, early), np.full(60, 0.02), np.full(20, level)])
    return make_run(train__kl=kl * (1 + ar1(35, 100, 0.005)))


def kl_spike(nums, past):
    kl = 0.05 + np.abs(ar1(34, 200, 0.005))
    kl[100] = nums[0] * pick(past, 1.05, 0.95)
    return make_run(train__kl=kl)


def kl_stop(nums, past):
    return make_run(train__kl=_kl_rise(nums[0] * pick(past, 1.05, 0.95)))


def kl_adapt_stalled(nums, past):
    return make_run(train__kl=_kl_rise(nums[0] * pick(past, 1.1, 0.9)),
                    train__reward=stalled(100, 35))


def kl_points(nums, past):
    kl = 0.05 + np.abs(ar1(36, 200, 0.005))
    k = int(nums[1]) - (0 if past else 1)
    kl[100:100 + k] = 12.0
    return make_run(train__kl=kl)


def kl_far(nums, past):
    kl = 0.05 + np.abs(ar1(37, 200, 0.005))
    kl[100] = nums[0] * pick(past, 1.05, 0.95)
    return make_run(train__kl=kl)


def kl_harm(nums, past):
    n = 200
    kl = 0.05 + np.abs(ar1(38, n, 0.005))
    kl[100] = 12.0
    return make_run(train__kl=kl, train__loss=nan_at(n, 150) if past else nan_at(n, n))


# --- likelihood_displacement ---------------------------------------------------------------

N_LP = 1000


def _logprob_decline(grown: float, seed: int = 40) -> np.ndarray:
    """Mean log-prob from -0.5, its magnitude up by ``grown`` within 400 steps."""
    return ramp(N_LP, -0.5, -0.5 * (1 + grown), 300, 700) + ar1(seed, N_LP, 0.003)


def lld_decline(nums, past):
    grown = nums[0] / 100 + pick(past, 0.05, -0.05)
    return make_run(rollout__old_log_prob=_logprob_decline(grown))


def lld_window(nums, past):
    # |log pi| growing exponentially by 60%: all within the table's window, or over 2.5x
    # it (21% per window).
    w = nums[1]
    span = pick(past, 0.9 * w, 2.5 * w)
    n = int(span) + 400
    t = np.arange(n)
    lp = -0.5 * 1.6 ** (np.clip(t - 200, 0, span) / span) + ar1(41, n, 0.002)
    return make_run(rollout__old_log_prob=lp)


def lld_significant(nums, past):
    lp = _logprob_decline(0.4) if past else (
        ramp(N_LP, -0.5, -0.7, 300, 500) + ramp(N_LP, 0.0, 0.2, 500, 700) + ar1(42, N_LP, 0.003))
    return make_run(rollout__old_log_prob=lp)


def _logprob_crash(nats: float, over: int = 3, back: bool = True, n: int = 200) -> np.ndarray:
    lp = ramp(n, -0.5, -0.5 - nats, 100, 100 + over)
    if back:
        lp = lp + ramp(n, 0.0, nats, 130, 133)
    return lp + ar1(43, n, 0.005)


def lld_crash(nums, past):
    return make_run(rollout__old_log_prob=_logprob_crash(nums[0] * pick(past, 1.2, 0.8)))


def lld_crash_points(nums, past):
    # A fall of 1.5 nats over fewer points than the table's, or over twice as many.
    over = int(nums[1]) - 1 if past else 2 * int(nums[1])
    return make_run(rollout__old_log_prob=_logprob_crash(1.5, over=over))


def lld_phase3_grad(nums, past):
    grad = ramp(N_LP, 0.3, 1.0 if past else 0.3, 300, 900) * (1 + ar1(44, N_LP, 0.05))
    return make_run(rollout__old_log_prob=_logprob_decline(0.4), actor__grad_norm=grad)


def lld_phase3_reward(nums, past):
    reward = falling(N_LP, 45) if past else stalled(N_LP, 46)
    return make_run(rollout__old_log_prob=_logprob_decline(0.4), critic__score__mean=reward)


def lld_crash_stays(nums, past):
    # 1.2 nats (a crash, the warning's line being 1), or 0.8: for good.
    return make_run(rollout__old_log_prob=_logprob_crash(pick(past, 1.2, 0.8), back=False))


# --- grad_explosion ------------------------------------------------------------------------

N_G = 400


def _grad(seed: int = 50, n: int = N_G, level: float = 0.4) -> np.ndarray:
    return level * (1 + 0.05 * np.abs(ar1(seed, n, 1.0)))


def grad_recurring(nums, past):
    g = _grad()
    for i in (200, 220, 240):
        g[i] = 0.4 * nums[0] * pick(past, 1.2, 0.8)
    return make_run(train__grad_norm=g)


def grad_unrecovered(nums, past):
    # A 6x spike after which the norm stays at 2.5x its level, or comes back to it.
    g = _grad()
    if past:
        g[201:] *= 2.5
    g[200] = 0.4 * 6
    return make_run(train__grad_norm=g)


def _inflated(ratio: float, level: float) -> np.ndarray:
    base = level / ratio
    return ramp(N_G, base, level, 150, 300) * (1 + 0.05 * np.abs(ar1(51, N_G, 1.0)))


def grad_inflated(nums, past):
    return make_run(train__grad_norm=_inflated(nums[0] * pick(past, 1.1, 0.9), 1.5 * nums[1]))


def grad_inflated_floor(nums, past):
    return make_run(train__grad_norm=_inflated(1.2 * nums[0], nums[1] * pick(past, 1.1, 0.9)))


def _burst_at_start(points: int, ratio: float, harm: bool = False) -> Run:
    n = 200
    g = _grad(52, n)
    g[:points] = ratio * float(np.quantile(g, 0.75))
    columns: dict[str, np.ndarray] = {"train__grad_norm": g}
    if harm:
        columns["train__loss"] = nan_at(n, 150)
    return make_run(**columns)


def grad_burst_ratio(nums, past):
    return _burst_at_start(int(nums[0]), nums[1] * pick(past, 1.1, 0.9))


def grad_burst_points(nums, past):
    return _burst_at_start(int(nums[0]) - (0 if past else 1), nums[1] * 1.1)


def grad_inflation_critical(nums, past):
    return make_run(train__grad_norm=_inflated(nums[0] * pick(past, 1.05, 0.95), 2.0))


def grad_inflation_spikes(nums, past):
    g = _inflated(6.0, 2.0)
    if past:
        for i in (320, 340, 360):
            g[i] *= 8
    return make_run(train__grad_norm=g)


def grad_nan_after(nums, past):
    g = _grad()
    for i in (200, 220, 240):
        g[i] *= 8
    return make_run(train__grad_norm=g, train__loss=nan_at(N_G, 300 if past else N_G))


def grad_burst_far(nums, past):
    return _burst_at_start(3, nums[0] * pick(past, 1.05, 0.95))


def grad_burst_harm(nums, past):
    return _burst_at_start(3, 11.0, harm=past)


def grad_one_update(nums, past):
    # One norm at (about) 10x its level, then NaN: the update that broke the run.
    g = _grad()
    g[200] = 0.4 * nums[0] * pick(past, 1.2, 0.8)
    return make_run(train__grad_norm=g, train__loss=nan_at(N_G, 210))


def grad_one_update_kl(nums, past):
    # One norm at 12x its level logged with KL in the dangerous band, or just under it, and
    # nothing after yet (just short of the points that judge it): only what the step itself
    # showed decides.
    n = 200 + int(nums[2])
    g = _grad(n=n)
    g[200] = 0.4 * nums[0] * 1.2
    kl = 0.3 * (1 + 0.05 * np.abs(ar1(53, n, 1.0)))
    kl[200] = nums[1] * pick(past, 1.1, 0.9)
    return make_run(train__grad_norm=g, train__kl=kl)


def grad_one_update_kl_judged(nums, past):
    # The same spike with the points that judge it after it, harmless: the run shrugged it off
    # (just short), or with one point fewer: still a warning (just past).
    n = 201 + int(nums[2]) - (1 if past else 0)
    g = _grad(n=n)
    g[200] = 0.4 * nums[0] * 1.2
    kl = 0.3 * (1 + 0.05 * np.abs(ar1(53, n, 1.0)))
    kl[200] = nums[1] * 1.1
    return make_run(train__grad_norm=g, train__kl=kl)


# --- numerical_failure ---------------------------------------------------------------------


def _finite_update(n: int = 100) -> dict[str, np.ndarray]:
    return {"train__loss": 0.1 + 0.01 * ar1(60, n, 1.0),
            "train__grad_norm": 0.4 + 0.01 * ar1(61, n, 1.0)}


def nan_statistic(nums, past):
    n = 100
    kl = (0.05 + 0.01 * np.abs(ar1(62, n, 1.0))).astype(object)
    if past:
        kl[60] = "nan"
    return make_run(train__kl=kl, **_finite_update(n))


def _nan_in(column: str):
    def build(nums, past):
        n = 100
        columns = {**_finite_update(n), "train__reward": 0.5 + 0.01 * ar1(63, n, 1.0),
                   "rollout__old_log_prob": -0.5 + 0.01 * ar1(64, n, 1.0),
                   "train__kl": 0.05 + 0.01 * np.abs(ar1(65, n, 1.0))}
        # just short: the NaN is in the KL, a logged statistic, not in the update
        key = column if past else "train__kl"
        bad = columns[key].astype(object)
        bad[60] = "inf" if key == "train__loss" else "nan"
        columns[key] = bad
        return make_run(**columns)
    return build


# --- no_learning_signal --------------------------------------------------------------------


def _dead_end(n: int, dead: int, *, level: float = 0.1, wiggle: float = 0.0,
              gradient: bool = False, loss_only: bool = False) -> Run:
    """A reward that moved between 0.3 and 0.6, then ``dead`` last points at ``level`` 0.1
    (so its range is 0.5; there it moves by ``wiggle`` of that range, every other point) with
    no gradient (or, with ``loss_only``, a loss of 0 and no grad norm logged)."""
    r = 0.45 + 0.15 * np.sin(np.arange(n) / 3.0)
    tail = level + wiggle * 0.5 * (np.arange(dead) % 2)
    r[n - dead:] = tail
    g = 0.4 + 0.01 * np.abs(ar1(70, n, 1.0))
    if not gradient:
        g[n - dead:] = 0.0
    if loss_only:
        return make_run(train__reward=r, train__loss=np.where(g > 0, g, 0.0))
    return make_run(train__reward=r, train__grad_norm=g)


def nls_at_best(nums, past):
    # The reward up to its best and flat there: no gradient (solved or stuck), or still one.
    n = 100
    r = ramp(n, 0.2, 0.9, 0, 70) + ar1(71, n, 0.01)
    r[75:] = r[:75].max()
    g = 0.4 + 0.01 * np.abs(ar1(72, n, 1.0))
    if past:
        g[75:] = 0.0
    return make_run(train__reward=r, train__grad_norm=g)


def nls_dead(nums, past):
    # Flat below its best (dead), or flat at its best (a warning: solved or stuck).
    if past:
        return _dead_end(100, 20)
    return nls_at_best(nums, True)


def nls_band(nums, past):
    return _dead_end(100, 20, wiggle=nums[0] / 100 * pick(past, 0.8, 1.2))


def nls_points(nums, past):
    # A log of 30: the last 5 dead (17% of it), or 4.
    return _dead_end(30, int(nums[0]) - (0 if past else 1))


def nls_fraction(nums, past):
    # A log of 100: one dead point more than the table's share of it, or one fewer.
    return _dead_end(100, round(100 * nums[1] / 100) + pick(past, 1, -1))


def nls_loss(nums, past):
    return _dead_end(100, 20, loss_only=True, gradient=not past)


def _lr_stopped(n: int, zero: int, level: float) -> Run:
    """A reward noisy about 0.5 (not solved) with gradients throughout, and the logged lr at
    ``level`` of its 1e-4 peak over the last ``zero`` of ``n`` points."""
    lr = np.full(n, 1e-4)
    lr[n - zero:] = 1e-4 * level
    return make_run(train__reward=0.5 + 0.05 * np.sin(np.arange(n) * 2.1),
                    train__grad_norm=0.4 + 0.01 * np.abs(ar1(73, n, 1.0)),
                    train__learning_rate=lr)


def nls_lr_level(nums, past):
    # The last 20 of 100 points just under (over) the table's share of the peak.
    return _lr_stopped(100, 20, nums[0] * pick(past, 0.5, 2.0))


def nls_lr_points(nums, past):
    # A log of 60 (its 10% is 6): the table's count of points at 0, or one fewer.
    return _lr_stopped(60, int(nums[1]) - (0 if past else 1), 0.0)


def nls_lr_share(nums, past):
    # A log of 300: one point more than the table's share of it, or one fewer.
    return _lr_stopped(300, round(300 * nums[2] / 100) + pick(past, 1, -1), 0.0)


# --- ratio_instability ---------------------------------------------------------------------


def _late(n: int, base: float, value: float, seed: int, k: int = 30) -> np.ndarray:
    v = base + 0.01 * ar1(seed, n, 1.0)
    v[-k:] = value + 0.005 * ar1(seed + 1, k, 1.0)
    return v


def ratio_max(nums, past):
    return make_run(train__probs_ratio_max=_late(100, 1.3, nums[0] + pick(past, 0.2, -0.2), 80))


def ratio_min(nums, past):
    return make_run(train__probs_ratio_min=_late(100, 0.8, nums[0] + pick(past, -0.02, 0.02), 81))


def ratio_clip(nums, past):
    return make_run(train__clip_ratio=_late(100, 0.05, nums[0] + pick(past, 0.02, -0.02), 82))


def ratio_is(nums, past):
    return make_run(**{"train/sampling/importance_sampling_ratio/max":
                       _late(100, 1.5, nums[0] + pick(past, 0.3, -0.3), 83)})


def ratio_is_low(nums, past):
    # The batch's largest train/inference ratio at 1/6.5 (or 1/3.5): the trainer gives every
    # sampled token a small share of the sampler's probability, or not.
    return make_run(**{"train/sampling/importance_sampling_ratio/max":
                       _late(100, 1.5, 1 / (nums[0] * pick(past, 1.3, 0.7)), 85)})


def ratio_late_share(nums, past):
    # Out of range on one recent step more than the table's share (7 of the last 20), or one
    # fewer (5), spread so that no 10 consecutive steps are half out of range.
    n = 100
    late = round(n * nums[1] / 100)
    k = round(late * nums[0] / 100) + pick(past, 1, -1)
    v = 1.3 + 0.01 * ar1(84, n, 1.0)
    v[np.linspace(n - late, n - 1, int(k)).round().astype(int)] = 3.5
    return make_run(train__probs_ratio_max=v)


def ratio_burst(nums, past):
    # Half of 10 consecutive steps out of range (every other one), or one fewer, mid-run;
    # the recent steps clean.
    share, window = nums
    k = int(np.ceil(share * window)) - (0 if past else 1)
    v = 1.3 + 0.01 * ar1(85, 100, 1.0)
    v[40:40 + 2 * k:2] = 3.5
    return make_run(train__probs_ratio_max=v)


def _mismatch(growth: float, steady: bool = True) -> np.ndarray:
    n = 100
    if steady:
        m = ramp(n, 0.001, 0.001 * growth, 10, 90)
    else:  # up early, then down to the same late level: no monotone trend
        m = np.concatenate([np.full(10, 0.001), np.full(80, 0.03), np.full(10, 0.001 * growth)])
    return m * (1 + ar1(86, n, 0.02))


def ratio_mismatch(nums, past):
    return make_run(rollout_corr__kl=_mismatch(nums[0] * pick(past, 1.1, 0.9)))


def ratio_mismatch_significant(nums, past):
    return make_run(rollout_corr__kl=_mismatch(15.0, steady=past))


def ratio_two(nums, past):
    columns = {"train__probs_ratio_max": _late(100, 1.3, 3.5, 87)}
    if past:
        columns["train__clip_ratio"] = _late(100, 0.05, 0.3, 88)
    return make_run(**columns)


def ratio_grad(nums, past):
    grad = ramp(100, 0.3, 1.5 if past else 0.3, 0, 99) * (1 + ar1(89, 100, 0.02))
    return make_run(train__probs_ratio_max=_late(100, 1.3, 3.5, 87), train__grad_norm=grad)


# --- reward_hacking ------------------------------------------------------------------------


def _efficiency(share: float, kl_end: float, n: int = 100, kl_flat: bool = False,
                **columns: np.ndarray) -> Run:
    """sqrt(KL) climbing steadily to sqrt(kl_end); the reward gaining per sqrt(KL) in the
    second half ``share`` of what it gained in the first."""
    k = ramp(n, 0.0, np.sqrt(kl_end), 0, n - 1) if not kl_flat else np.full(n, np.sqrt(kl_end))
    half = np.sqrt(kl_end) / 2
    reward = 0.2 + np.minimum(k, half) + share * np.maximum(k - half, 0)
    return make_run(train__kl=k ** 2 * (1 + ar1(100, n, 0.002)),
                    train__reward=reward + ar1(101, n, 0.001), **columns)


def hack_efficiency(nums, past):
    return _efficiency(nums[0] / 100 * pick(past, 0.8, 1.2), 2.0)


def hack_min_kl(nums, past):
    return _efficiency(0.1, nums[1] * pick(past, 1.1, 0.9))


def hack_kl_significant(nums, past):
    return _efficiency(0.1, 2.0, kl_flat=not past)


def _cheat(at: list[int], n: int = 100) -> Run:
    cheat = np.ones(n)
    cheat[at] = -1.0
    return make_run(**{"rewards/no_cheating": cheat, "reward": rising(n, 102)})


def hack_cheat_recent(nums, past):
    # Negative on 12% (6 of 50) or 8% (4 of 50) of the last half, never before.
    k = round(50 * nums[0] / 100 * pick(past, 1.2, 0.8))
    return _cheat(list(range(52, 52 + 8 * k, 8)))


def hack_cheat_overall(nums, past):
    # Negative on 22% or 18% of all steps, all in the first half (none recent).
    k = round(100 * nums[1] / 100 * pick(past, 1.1, 0.9))
    return _cheat(list(range(2, 2 + 2 * k, 2)))


def _heldout(lost: float, n: int = 200) -> Run:
    t = np.arange(n)
    peak = 0.6
    held = np.where(t < 100, 0.3 + 0.3 * t / 100, peak - peak * lost * np.clip((t - 100) / 50,
                                                                               0, 1))
    held = held + ar1(103, n, 0.003)
    held[t % 10 != 0] = np.nan  # evaluated every 10 steps
    return make_run(train__reward=rising(n, 104), eval__accuracy=held)


def hack_heldout(nums, past):
    return _heldout(nums[0] / 100 + pick(past, 0.05, -0.05))


def hack_heldout_noise(nums, past):
    # A held-out score near its floor whose evaluations swing +-0.01 (a step noise of 0.021):
    # 0.11 for 15 evaluations, then lower by just over or under 3x that noise (from its
    # smoothed best, 0.12); 30%+ of the peak lost either way.
    n_eval = 30
    swing = np.where(np.arange(n_eval) % 2 == 0, 0.01, -0.01)
    noise = 1.4826 * 0.02 / np.sqrt(2)
    drop = nums[0] * noise * pick(past, 1.2, 0.8) - 0.01
    held_eval = np.where(np.arange(n_eval) < 15, 0.11, 0.11 - drop) + swing
    n = 10 * n_eval
    held = np.full(n, np.nan)
    held[::10] = held_eval
    return make_run(train__reward=rising(n, 104), eval__accuracy=held)


def hack_crash_took_both(nums, past):
    """The held-out turnover of ``_heldout`` (half its peak lost over steps 100-150); the
    train reward holding (past: hacking), or falling with it by twice the table's share of
    its range (short: one crash took both)."""
    n = 200
    t = np.arange(n)
    peak = 0.6
    held = np.where(t < 100, 0.3 + 0.3 * t / 100, peak - peak * 0.5 * np.clip((t - 100) / 50,
                                                                              0, 1))
    held = held + ar1(103, n, 0.003)
    held[t % 10 != 0] = np.nan
    reward = rising(n, 104)
    if not past:
        reward = np.where(t > 100, reward - 2 * 0.25 * np.ptp(reward), reward)
    return make_run(train__reward=reward, eval_accuracy=held)


def hack_two_forms(nums, past):
    # The KL efficiency collapsing, and (just past) an anti-cheat term caught recently.
    cheat = np.ones(100)
    if past:
        cheat[60::8] = -1.0
    return _efficiency(0.1, 2.0, **{"rewards/no_cheating": cheat})


# --- length_hacking ------------------------------------------------------------------------


def len_truncated(nums, past):
    share = nums[0] / 100 + pick(past, 0.05, -0.05)
    return make_run(train__completions__clipped_ratio=np.clip(share + ar1(110, 60, 0.01), 0, 1))


def _budget(heavy_steps: int, heavy: float, costs: bool = True, light: float = 0.0) -> Run:
    """60 logged steps, ``heavy_steps`` of them (spread, few late) with ``heavy`` of the
    completions cut, the others ``light``; the cut steps score lower when ``costs``."""
    n = 60
    t = np.full(n, light)
    at = np.linspace(0, 50, heavy_steps).round().astype(int)
    t[at] = heavy
    rng = np.random.default_rng(111)
    reward = (3.0 - 3.0 * t if costs else 2.0 + rng.normal(0, 1.0, n)) + rng.normal(0, 0.2, n)
    return make_run(train__completions__clipped_ratio=t, train__reward=reward)


def len_budget_share(nums, past):
    # 24 of 60 steps heavy: the mean share just over or under the table's.
    heavy = nums[0] / 100 * pick(past, 1.1, 0.9) * 60 / 24
    return _budget(24, heavy)


def len_budget_third(nums, past):
    # 32% of the completions cut over the run either way; on 24 of 60 steps, or 18 (< a third).
    k = 24 if past else 18
    return _budget(k, min(1.0, 0.32 * 60 / k) if past else 1.0, light=0.02 if past else 0.033)


def len_budget_costs(nums, past):
    return _budget(24, 0.85, costs=past)


def len_growth(nums, past):
    n = 100
    length = ramp(n, 300, 300 * nums[0] * pick(past, 1.1, 0.9), 10, 90) * (1 + ar1(112, n, 0.01))
    return make_run(completion_length=length, reward=stalled(n, 113))


def len_growth_significant(nums, past):
    # x1.6 late over early: after a steady rise, or after a dip (no trend).
    n = 100
    if past:
        length = ramp(n, 300, 480, 10, 90)
    else:
        length = np.concatenate([np.full(10, 300.0), np.full(80, 200.0), np.full(10, 480.0)])
    return make_run(completion_length=length * (1 + ar1(114, n, 0.01)),
                    reward=stalled(n, 113))


def _step_down_length(share: float, n: int = 100) -> np.ndarray:
    """Length 300 over the first 12 logs (the start is their first 10%), then at ``share`` of
    it: a fall the autocorrelation-corrected trend test does not call significant."""
    length = 300 * share * (1 + ar1(115, n, 0.005))
    length[:12] = 300 * (1 + ar1(116, 12, 0.005))
    return length


def len_collapse(nums, past):
    return make_run(completion_length=_step_down_length(nums[0] / 100 * pick(past, 0.85, 1.2)),
                    reward=rising(100, 117))


def len_collapse_back(nums, past):
    # Down to 20% of its level for 20 points and back, or to 40%.
    n = 100
    length = 200 * (1 + ar1(118, n, 0.005))
    length[40:60] = 200 * pick(past, 0.2, 0.4)
    return make_run(completion_length=length)


def len_truncated_critical(nums, past):
    return len_truncated((nums[0],), past)


def len_tokens(nums, past):
    n = 100
    end = nums[0] + pick(past, -0.5, 1.0)
    return make_run(completion_length=ramp(n, 100, end, 20, 80) * (1 + ar1(119, n, 0.002)),
                    reward=rising(n, 120))


def len_stalled(nums, past):
    n = 60
    return make_run(train__completions__clipped_ratio=np.clip(0.6 + ar1(121, n, 0.01), 0, 1),
                    train__completions__mean_length=250 + ar1(122, n, 2.0),
                    train__reward=stalled(n, 123) if past else rising(n, 124))


def len_stalled_points(nums, past):
    n = int(nums[0]) - (0 if past else 1)
    return make_run(train__completions__clipped_ratio=np.clip(0.6 + ar1(121, n, 0.01), 0, 1),
                    train__completions__mean_length=250 + ar1(122, n, 2.0),
                    train__reward=stalled(n, 123))


# --- format_gaming -------------------------------------------------------------------------


def _format_run(fmt_gain: float, other_gain: float, *, accuracy: np.ndarray | None = None,
                n: int = 100, heldout: np.ndarray | None = None, fmt: np.ndarray | None = None
                ) -> Run:
    f = ramp(n, 0.1, 0.1 + fmt_gain, 20, 80) + ar1(130, n, 0.005) if fmt is None else fmt
    other = ramp(n, 0.0, other_gain, 20, 80) + ar1(131, n, 0.005)
    acc = np.clip(0.2 + ar1(132, n, 0.01), 0, 1) if accuracy is None else accuracy
    columns = {"rewards/format_reward": f, "rewards/length_reward": other,
               "rewards/accuracy_reward": acc, "reward": f + other + acc}
    if heldout is not None:
        columns["eval/accuracy"] = heldout
    return make_run(**columns)


def fmt_share(nums, past):
    share = nums[0] / 100 + pick(past, 0.05, -0.05)
    return _format_run(share, 1 - share)


def fmt_min_gain(nums, past):
    # The correctness term fires on a few mid-run steps only (its median never moves): the
    # reward's range is 1 plus the format gain, the gain just over or under its share of it.
    n = 100
    share = nums[1] / 100 * pick(past, 1.2, 0.8)
    gain = share / (1 - share)
    acc = np.zeros(n)
    acc[[45, 50, 55]] = 1.0
    return _format_run(gain, 0.0, accuracy=acc)


def fmt_significant(nums, past):
    # The format term up 0.4 late over early: a steady rise, or high, then a dip, then
    # higher (no trend).
    n = 100
    if past:
        return _format_run(0.4, 0.0)
    f = np.concatenate([np.full(20, 0.5), np.full(60, 0.1), np.full(20, 0.9)])
    return _format_run(0.0, 0.0, fmt=f + ar1(133, n, 0.005))


def fmt_correctness(nums, past):
    n = 100
    acc = None if past else ramp(n, 0.2, 0.6, 20, 80) + ar1(134, n, 0.01)
    return _format_run(1.0, 0.0, accuracy=acc)


def fmt_heldout(nums, past):
    n = 100
    held = (ramp(n, 0.5, 0.3, 20, 80) if past else np.full(n, 0.4)) + ar1(135, n, 0.005)
    held[np.arange(n) % 5 != 0] = np.nan
    # A correctness term that fell (no flat level, which is critical of its own over 100 logs).
    falling = ramp(n, 0.3, 0.2, 20, 80) + ar1(132, n, 0.005)
    return _format_run(1.0, 0.0, heldout=held, accuracy=falling)


def fmt_flat(nums, past):
    n = int(nums[0]) - (0 if past else 1)
    return _format_run(1.0, 0.0, n=n)  # accuracy: 0.2 plus noise, no trend


def fmt_long_log(nums, past):
    n = int(nums[0]) - (0 if past else 1)
    return _format_run(1.0, 0.0, accuracy=np.full(n, -2.0), n=n)


# --- tool_spam -----------------------------------------------------------------------------


def _tools(start: float, end: float, *, steady: bool = True, n: int = 100,
           reward: np.ndarray | None = None) -> Run:
    if steady:
        calls = ramp(n, start, end, 20, 80)
    else:  # late over early at the same ratio, after a dip: no trend
        calls = np.concatenate([np.full(20, start), np.full(60, 0.3 * start), np.full(20, end)])
    columns = {"tool_calls": calls * (1 + ar1(140, n, 0.01))}
    if reward is not None:
        columns["reward"] = reward
    return make_run(**columns)


def tool_surge(nums, past):
    return _tools(1.0, nums[0] * pick(past, 1.1, 0.9), reward=rising(100, 141))


def tool_min_calls(nums, past):
    return _tools(0.2, 0.2 + nums[1] * pick(past, 1.1, 0.9), reward=rising(100, 141))


def tool_significant(nums, past):
    return _tools(1.0, 4.0, steady=past, reward=rising(100, 141))


def tool_stalled(nums, past):
    return _tools(1.0, 4.0, reward=stalled(100, 142) if past else rising(100, 141))


# --- tool_failure --------------------------------------------------------------------------


def _failures(early: float, late: float, n: int = 100) -> Run:
    """A failure share at ``early`` over the first 30% of the log, ``late`` from 60% on."""
    share = np.clip(ramp(n, early, late, 30, 60) + ar1(150, n, 0.005), 0.0, 1.0)
    return make_run(tools__failure_frequency=share, reward=stalled(n, 151))


def fail_late(nums, past):
    return _failures(0.1, nums[0] / 100 * pick(past, 1.1, 0.9))


def fail_broken(nums, past):
    level = nums[0] / 100 * pick(past, 1.05, 0.95)
    return _failures(min(level, 1.0), min(level, 1.0))


# --- reward_overfit ------------------------------------------------------------------------


def _overfit(lost: float, peak_at: int = 100, n: int = 200, fall: int = 50) -> Run:
    """Reward 0.2 -> 0.8 by ``peak_at``, then giving back ``lost`` of the gain over ``fall``
    steps, flat after."""
    r = ramp(n, 0.2, 0.8, 0, peak_at) - ramp(n, 0.0, 0.6 * lost, peak_at, peak_at + fall)
    return make_run(train__reward=r + ar1(150, n, 0.01))


def overfit_giveback(nums, past):
    return _overfit(nums[0] / 100 + pick(past, 0.05, -0.05))


def overfit_after(nums, past):
    # A peak followed by just over (or under) the table's share of the log, then a fast fall.
    n = 200
    after = round(n * nums[1] / 100 * pick(past, 1.25, 0.75))
    return _overfit(0.7, peak_at=n - after, fall=min(10, after // 2))


def _crash(share: float, back: bool, n: int = 200) -> Run:
    """Reward 0 -> 1 over the first 100 steps, then a fall of ``share`` of that range within
    3 points at step 150, back 20 points later (or never)."""
    r = ramp(n, 0.0, 1.0, 0, 100) - ramp(n, 0.0, share, 150, 153)
    if back:
        r = r + ramp(n, 0.0, share, 173, 176)
    return make_run(train__reward=r + ar1(151, n, 0.005))


def overfit_crash_magnitude(nums, past):
    """A reward pinned near 1.5 (a range of hundredths) whose fall is 80% of its range and
    1.5x (or 0.5x) the table's share of its magnitude, back 20 points later."""
    n = 200
    drop = 1.5 * nums[2] / 100 * pick(past, 1.5, 0.5)
    r = 1.5 - ramp(n, 0.0, drop, 150, 153) + ramp(n, 0.0, drop, 173, 176)
    r[:100] -= drop / 4 * np.linspace(1, 0, 100)  # a range the fall is 80% of
    return make_run(train__reward=r + ar1(151, n, drop / 400))


def overfit_crash(nums, past):
    return _crash(nums[0] / 100 + pick(past, 0.1, -0.1), back=True)


def overfit_crash_points(nums, past):
    # 80% of the range lost over fewer points than the table's, or over twice as many.
    n = 200
    over = int(nums[1]) - 2 if past else 2 * int(nums[1])
    r = ramp(n, 0.0, 1.0, 0, 100) - ramp(n, 0.0, 0.8, 150, 150 + over) + ramp(n, 0.0, 0.8, 180,
                                                                               183)
    return make_run(train__reward=r + ar1(152, n, 0.005))


def overfit_critical(nums, past):
    return _overfit(nums[0] / 100 + pick(past, 0.05, -0.05))


def overfit_crash_stays(nums, past):
    return _crash(pick(past, 0.7, 0.5), back=False)


# --- entropy_blowup ------------------------------------------------------------------------


def _blowup(base: float, top: float, n: int = 200, **columns: np.ndarray) -> Run:
    h = ramp(n, base, top, 80, 160) * (1 + ar1(160, n, 0.005))
    return make_run(train__entropy=h, **columns)


def blowup_rise(nums, past):
    return _blowup(0.5, 0.5 * (1 + nums[0] / 100 + pick(past, 0.05, -0.05)))


def blowup_min_rise(nums, past):
    # +73% (or +60%) of a low baseline: just over (or under) the table's nats.
    return _blowup(0.3, 0.3 + nums[1] * pick(past, 1.1, 0.9))


def blowup_held(nums, past):
    # A jump to 2x for a few logged points, no climb before it: held long enough, or not.
    n = 100
    h = 0.5 * (1 + ar1(161, n, 0.005))
    k = int(nums[2]) + pick(past, 1, -1)
    h[60:60 + int(k)] = 1.0
    return make_run(train__entropy=h)


def blowup_significant(nums, past):
    # Up 60% at the end: a steady climb, or the last three logs (no trend, not held).
    n = 100
    if past:
        return make_run(train__entropy=ramp(n, 0.5, 0.8, 30, 90) * (1 + ar1(160, n, 0.005)))
    h = 0.5 * (1 + ar1(162, n, 0.005))
    h[-3:] = 0.8
    return make_run(train__entropy=h)


def blowup_at_end(nums, past):
    # A flat 0.5 whose last two logs climb 0.25 nats each (past) or 0.15 (short: to 0.8,
    # above the line, but a step the check does not call a climb yet).
    n = 100
    h = 0.5 * (1 + ar1(167, n, 0.005))
    rise = nums[0] * pick(past, 1.25, 0.75)
    h[-2], h[-1] = h[-3] + rise, h[-3] + 2 * rise
    return make_run(train__entropy=h)


def blowup_paid(nums, past):
    return _blowup(0.5, 0.8, train__reward=stalled(200, 163) if past else rising(200, 164))


def blowup_paid_limit(nums, past):
    up = nums[3] / 100 + pick(past, 0.1, -0.1)
    return _blowup(0.5, 0.5 * (1 + up), train__reward=rising(200, 164))


def blowup_grad(nums, past):
    grad = ramp(200, 0.3, 1.0 if past else 0.3, 80, 160) * (1 + ar1(165, 200, 0.05))
    return _blowup(0.5, 0.8, train__grad_norm=grad)


def blowup_reward(nums, past):
    return _blowup(0.5, 0.8, train__reward=falling(200, 166) if past else stalled(200, 163))


# --- no_progress ---------------------------------------------------------------------------


def _no_progress(n: int, end: float, accuracy_falls: bool = True) -> Run:
    """A reward flat at ``end`` but for a bump to 0.9 and a dip to 0.3 (its best and its
    range), while the correctness term falls (or stays flat, at 0.6: above the level a flat
    task score counts as stuck at)."""
    r = end + ar1(170, n, 0.005)
    r[n // 3:n // 3 + 5] = 0.9
    r[n // 2:n // 2 + 5] = 0.3
    acc = ramp(n, 0.3, 0.1, 0, n - 1) + ar1(171, n, 0.005) if accuracy_falls else stalled(
        n, 171, 0.6, 0.005)
    return make_run(train__reward=r, **{"rewards/accuracy_reward": acc})


def np_points(nums, past):
    return _no_progress(int(nums[0]) - (0 if past else 1), 0.72)


def np_below_best(nums, past):
    # (0.9 - end) / 0.6 just over or under the table's share.
    below = nums[1] * pick(past, 1.2, 0.8)
    return _no_progress(100, 0.9 - 0.6 * below)


def np_backwards(nums, past):
    return _no_progress(100, 0.72, accuracy_falls=past)


def np_memorised(nums, past):
    """A 0/1 accuracy at 1.0 from step 20 on; the held-out score (every 5th step) 0.5 over
    the first half and just under (or over) the table's gain higher over the second."""
    n = 200
    acc = ramp(n, 0.6, 1.0, 0, 20)
    gain = nums[1] * pick(past, 0.8, 1.2)
    held = np.full(n, np.nan)
    held[::5] = np.r_[np.full(20, 0.5), np.full(20, 0.5 + gain)] + flat(40, 0.0, 174, 0.002)
    return make_run(train__reward=acc, **{"rewards/accuracy_reward": acc},
                    eval_accuracy=held)


def _stuck(n: int, score: float, reward_up: float = 0.0, terms: bool = False) -> Run:
    """A held-out score flat at ``score`` (0-1, every 5th step) over ``n`` logged points, and a
    reward flat at 0.5 but for a bump to 0.8 and a dip to 0.2 (its range, 0.6) whose last fifth
    sits ``reward_up`` of that range higher. With ``terms``, the task's score is a correctness
    term (every step) beside a format term, for format_gaming to weigh, not a held-out score."""
    r = stalled(n, 172, 0.5, 0.005)
    r[n // 3:n // 3 + 5] = 0.8
    r[n // 2:n // 2 + 5] = 0.2
    r[-(n // 5):] += 0.6 * reward_up
    if terms:
        return make_run(train__reward=r, **{
            "train/rewards/accuracy_reward/mean": stalled(n, 173, score, 0.01),
            "train/rewards/format_reward/mean": stalled(n, 174, 0.5, 0.01)})
    held = np.full(n, np.nan)
    held[::5] = stalled(len(held[::5]), 173, score, 0.01)
    return make_run(train__reward=r, eval_accuracy=held)


def np_stuck_points(nums, past):
    return _stuck(int(nums[0]) - (0 if past else 1), 0.1)


def np_stuck_low(nums, past):
    return _stuck(120, nums[1] * pick(past, 0.9, 1.1))


def np_material(nums, past):
    """The held-out score climbing steadily (a significant trend) by just under (or over)
    the table's gain between its first and last fifth, from 0.25 (so 1.5x is not reached)."""
    n = 150
    gain = nums[0] * pick(past, 0.8, 1.2)
    r = stalled(n, 172, 0.5, 0.005)
    held = np.full(n, np.nan)
    held[::5] = ramp(30, 0.25, 0.25 + gain / 0.8, 0, 29) + flat(30, 0.0, 175, 0.002)
    return make_run(train__reward=r, eval_accuracy=held)


def np_held_back(nums, past):
    """A held-out score crawling 0.38 -> 0.47 (improved, still below the line) over the
    table's points, KL just under (over) its line, with the table's beta (x1.2) as the run's
    setting."""
    from dataclasses import replace

    n = int(nums[0])
    held = np.full(n, np.nan)
    held[::5] = ramp(len(held[::5]), 0.38, 0.47, 0, len(held[::5]) - 1)
    kl = np.abs(nums[4] * pick(past, 0.6, 1.4) * (1 + ar1(176, n, 0.02)))
    run = make_run(train__reward=stalled(n, 177, 0.5, 0.01), eval_accuracy=held,
                   train__kl=kl, train__frac_reward_zero_std=np.full(n, 0.1))
    return replace(run, config={"beta": nums[5] * 1.2})


def _stopped_short(level: float, second_half_gain: float, n: int = 200) -> Run:
    """A held-out score (every 5th step) climbing 0.3 -> ``level`` over the first half, flat
    over the third quarter and ``second_half_gain`` higher over the last, KL held at 0.02 by
    beta 1.2, groups mixed."""
    from dataclasses import replace

    k = n // 5
    held = np.full(n, np.nan)
    held[::5] = np.r_[ramp(k // 2, 0.3, level, 0, k // 2 - 1), np.full(k // 4, level),
                      np.full(k - k // 2 - k // 4, level + second_half_gain)]
    held[::5] += ar1(180, k, 0.002)
    run = make_run(train__reward=rising(n, 181, 0.4, 0.6), eval_accuracy=held,
                   train__kl=np.abs(0.02 * (1 + ar1(182, n, 0.02))),
                   train__frac_reward_zero_std=np.full(n, 0.1))
    return replace(run, config={"beta": 1.2})


def np_stopped_short_level(nums, past):
    # Flat over its second half, at 0.9 of the table's line (or 5% above it: solved).
    return _stopped_short(nums[0] * pick(past, 0.9, 1.05), 0.0)


def np_stopped_short_gain(nums, past):
    # At 0.6, up 0.8x (or 1.6x) the table's gain over the second half.
    return _stopped_short(0.6, nums[1] * pick(past, 0.8, 1.6))


def _plateau(held_gain: float, train_end: float, held_end: float) -> Run:
    """A 0/1 accuracy climbing 0.5 -> ``train_end`` - 0.1 over the first half and 0.1 more over
    the second; a held-out score (every 5th step) climbing 0.3 -> ``held_end`` -
    ``held_gain`` over the first half and ``held_gain`` more over the second."""
    n = 200
    acc = np.r_[ramp(n // 2, 0.5, train_end - 0.1, 0, n // 2 - 1),
                ramp(n - n // 2, train_end - 0.1, train_end, 0, n - n // 2 - 1)]
    k = n // 5
    held = np.full(n, np.nan)
    held[::5] = np.r_[ramp(k // 2, 0.3, held_end - held_gain, 0, k // 2 - 1),
                      ramp(k - k // 2, held_end - held_gain, held_end, 0, k - k // 2 - 1)]
    held[::5] += flat(k, 0.0, 175, 0.002)
    return make_run(train__reward=acc, **{"rewards/accuracy_reward": acc},
                    eval_accuracy=held)


def np_plateau_gain(nums, past):
    # The held-out score's last half up 0.4x (or 2x) the table's gain.
    return _plateau(nums[0] * pick(past, 0.4, 2.0), 0.97, 0.6)


def np_plateau_train(nums, past):
    # The training score ending 5% over (7% under) the table's level.
    return _plateau(0.0, nums[1] * pick(past, 1.05, 0.93), 0.5)


def np_plateau_gap(nums, past):
    # The training score 1.25x (0.75x) the table's gap above the held-out score.
    return _plateau(0.0, 0.95, 0.95 - nums[2] * pick(past, 1.25, 0.75))


def np_memorised_from_start(nums, past):
    """The memorised run of ``np_memorised``, its 0/1 accuracy at 1.0 from the first step (or
    climbing from 0.6 over twice the table's share of the log): nothing learned, or the
    training set learned by heart."""
    n = 200
    acc = np.ones(n) if past else ramp(n, 0.6, 1.0, 0, 2 * nums[1] / 100 * n)
    held = np.full(n, np.nan)
    held[::5] = 0.5 + flat(40, 0.0, 174, 0.002)
    return make_run(train__reward=acc, **{"rewards/accuracy_reward": acc},
                    eval_accuracy=held)


def np_never_moved(nums, past):
    """A reward of flat noise over the table's points, mixed groups, KL just under (over) the
    table's line on nine points in ten, with a beta the config sets."""
    from dataclasses import replace

    n = int(nums[0])
    kl = np.abs(nums[1] * pick(past, 0.5, 1.5) * (1 + ar1(178, n, 0.05)))
    run = make_run(train__reward=stalled(n, 179, 0.5, 0.02), train__kl=kl,
                   train__frac_reward_zero_std=np.full(n, 0.1))
    return replace(run, config={"beta": 0.04})


def _moved_for_nothing(n: int, entropy_drop: float = 0.0, kl_end: float | None = None) -> Run:
    """A reward of i.i.d. noise around 0.5 (never leaving its level) over ``n`` logged points,
    groups mixed on 90% of them, and a policy that moved: its entropy ``entropy_drop`` off its
    first points from step 8 on, or a KL climbing from 0.001 to ``kl_end``."""
    rng = np.random.default_rng(181)
    reward = 0.5 + rng.normal(0, 0.05, n)
    cols: dict[str, np.ndarray] = {"train__reward": reward,
                                   "train__frac_reward_zero_std": np.full(n, 0.1)}
    if kl_end is None:
        cols["train__entropy"] = np.r_[np.full(7, 0.3), np.full(n - 7, 0.3 * (1 - entropy_drop))]
    else:
        cols["train__kl"] = np.r_[np.full(7, 0.001), np.linspace(0.001, kl_end, n - 7)]
    return make_run(**cols)


def np_moved_points(nums, past):
    return _moved_for_nothing(int(nums[0]) - (0 if past else 1), entropy_drop=0.3)


def np_moved_kl(nums, past):
    return _moved_for_nothing(150, kl_end=nums[1] * pick(past, 1.5, 0.7))


def np_moved_entropy(nums, past):
    return _moved_for_nothing(150, entropy_drop=nums[2] / 100 * pick(past, 1.3, 0.75))


def np_stuck_reward(nums, past):
    # With correctness and format terms: a reward gain is format_gaming's to weigh.
    return _stuck(120, 0.1, reward_up=nums[2] * pick(past, 0.8, 1.2), terms=True)


def np_gain_not_carried(nums, past):
    # The reward up a third of its range; the held-out score ends just under (over) the line.
    return _stuck(int(nums[1]), nums[2] * pick(past, 0.9, 1.1), reward_up=nums[0] * 1.3)


# --- the table's thresholds ----------------------------------------------------------------

T = Threshold
THRESHOLDS: list[Threshold] = [
    # entropy_collapse
    T("entropy_collapse", "warning", "drop_share",
      r"significant decline losing > (\d+)% within ([\d,]+) steps", ent_drop,
      (param("drop_fraction", 0.01), param("window_steps"))),
    T("entropy_collapse", "warning", "drop_window",
      r"significant decline losing > (\d+)% within ([\d,]+) steps", ent_window,
      (param("drop_fraction", 0.01), param("window_steps"))),
    T("entropy_collapse", "warning", "significant", r"significant decline", ent_significant),
    T("entropy_collapse", "warning", "reward_not_paying", r"reward no longer paying for it",
      ent_reward_paying),
    T("entropy_collapse", "warning", "spent_while_improving",
      r"entropy < (\d+)% of its start while the task still improves", ent_spent_improving,
      (param("critical_ratio", 0.01),)),
    T("entropy_collapse", "critical", "below_share_of_start",
      r"entropy < (\d+)% of its start unless", ent_ratio, (param("critical_ratio", 0.01),)),
    T("entropy_collapse", "critical", "floor", r"entropy < ([\d.]+) nats whatever its start",
      ent_floor, (param("floor"),)),
    T("entropy_collapse", "critical", "reward_falling", r"corroborated: reward falling",
      ent_reward_falling),
    T("entropy_collapse", "critical", "zero_std", r"zero-std groups at (\d+)%", ent_zero_std),
    T("entropy_collapse", "critical", "zero_std_rising", r"or rising past (\d+)%",
      ent_zero_std_rising),
    T("entropy_collapse", "critical", "grad_vanishing", r"grad norm down to (\d+)% of its start",
      ent_grad),
    T("entropy_collapse", "critical", "truncated", r"completions (\d+)%\+ truncated at the cap",
      ent_truncated),
    T("entropy_collapse", "critical", "shrunk_share",
      r"shrunk below (\d+)% of their start to (\d+) tokens or fewer", ent_shrunk_share),
    T("entropy_collapse", "critical", "shrunk_tokens",
      r"shrunk below (\d+)% of their start to (\d+) tokens or fewer", ent_shrunk_tokens),
    # advantage_collapse
    T("advantage_collapse", "warning", "equal_share", r"> (\d+)% of groups with equal rewards",
      adv_share, (param("warn_fraction", 0.01),)),
    T("advantage_collapse", "warning", "late_window", r"over the last (\d+)% of the log",
      adv_late, (param("late_fraction", 0.01),)),
    T("advantage_collapse", "warning", "not_proven_solved", r"not proven solved", adv_solved),
    T("advantage_collapse", "warning", "reward_not_rising", r"the reward not still rising",
      adv_rising),
    T("advantage_collapse", "warning", "pinned_component",
      r"a reward component that never moves while reward stalls", adv_component),
    T("advantage_collapse", "critical", "share", r"^> (\d+)%,", adv_critical,
      (param("critical_fraction", 0.01),)),
    T("advantage_collapse", "critical", "heldout_solved",
      r"never when the held-out score \(0-1\) ends at ([\d.]+) or more", adv_heldout_solved),
    T("advantage_collapse", "critical", "stalled_points",
      r"> (\d+)% with the reward not improving .*? over (\d+)\+ logged points",
      adv_stalled_points, (param("warn_fraction", 0.01), None)),
    T("advantage_collapse", "critical", "steps_confident",
      r"over 40\+ logged points \(read from steps with reward std 0: over (\d+)% with (\d+)% "
      r"confidence, late or over the log\)", adv_steps_confident,
      (param("warn_fraction", 0.01), None)),
    T("advantage_collapse", "critical", "entropy_halved",
      r"or entropy falling significantly by half", adv_entropy),
    T("advantage_collapse", "critical", "task_never_moving",
      r"the task's own \(correctness\) reward never moving", adv_task_dead),
    T("advantage_collapse", "critical", "task_patience",
      r"the task's own reward never moving over (\d+)\+ logged steps while other terms carry "
      r"the signal \(fewer: a warning, a sparse one often first fires after ~(\d+)\)",
      adv_task_patience, (param("task_patience"), param("task_patience"))),
    # kl_drift
    T("kl_drift", "warning", "drifting", r"sustained KL in ([\d.]+)-(\d+) and rising significantly",
      kl_drift, (param("drift_kl"), param("adapt_kl"))),
    T("kl_drift", "warning", "rising_significantly", r"and rising significantly", kl_significant),
    T("kl_drift", "warning", "offset", r"or ≥ ([\d.]+) from the first logged step", kl_offset,
      (param("drift_kl"),)),
    T("kl_drift", "warning", "fourfold", r"or at (\d+)x\+ its early level", kl_fourfold,
      (param("rise_factor"),)),
    T("kl_drift", "warning", "danger_band", r"\), or (\d+)-(\d+);", kl_band,
      (param("adapt_kl"), param("stop_kl")), short_words="drifting"),
    T("kl_drift", "warning", "incident", r"any logged KL > (\d+) the run came back from",
      kl_spike, (param("stop_kl"),)),
    T("kl_drift", "critical", "sustained", r"^sustained KL > (\d+),", kl_stop,
      (param("stop_kl"),)),
    T("kl_drift", "critical", "danger_stalled", r"or > (\d+) with reward not improving",
      kl_adapt_stalled, (param("adapt_kl"),)),
    T("kl_drift", "critical", "incident_points", r"KL > (\d+) for (\d+) logged points", kl_points,
      (param("stop_kl"), param("sustained_points"))),
    T("kl_drift", "critical", "incident_far", r"or > (\d+) once", kl_far,
      (lambda p: p["far_factor"] * p["stop_kl"],)),
    T("kl_drift", "critical", "incident_harm", r"or followed by harm \(", kl_harm),
    # likelihood_displacement
    T("likelihood_displacement", "warning", "decline_share",
      r"falls > (\d+)% of its magnitude within (\d+) steps", lld_decline,
      (param("decline_fraction", 0.01), param("window_steps"))),
    T("likelihood_displacement", "warning", "decline_window",
      r"falls > (\d+)% of its magnitude within (\d+) steps", lld_window,
      (param("decline_fraction", 0.01), param("window_steps"))),
    T("likelihood_displacement", "warning", "significant", r"significant trend", lld_significant),
    T("likelihood_displacement", "warning", "crash_nats",
      r"a crash \(> (\d+) nat within (\d+) points\) it came back from", lld_crash,
      (param("crash_nats"), param("crash_points"))),
    T("likelihood_displacement", "warning", "crash_points",
      r"a crash \(> (\d+) nat within (\d+) points\) it came back from", lld_crash_points,
      (param("crash_nats"), param("crash_points"))),
    T("likelihood_displacement", "critical", "grad_rising",
      r"with grad norm or entropy rising significantly", lld_phase3_grad),
    T("likelihood_displacement", "critical", "reward_turning_down",
      r"or reward turning down \(LLD phase 3\)", lld_phase3_reward),
    T("likelihood_displacement", "critical", "crash_never_back",
      r"a crash it never came back from", lld_crash_stays),
    # grad_explosion
    T("grad_explosion", "warning", "recurring_spikes", r"recurring (\d+)x spikes",
      grad_recurring, (param("spike_ratio"),)),
    T("grad_explosion", "warning", "unrecovered_spike", r"an unrecovered spike",
      grad_unrecovered),
    T("grad_explosion", "warning", "inflated", r"a (\d+)x inflated level of at least ([\d.]+)",
      grad_inflated, (param("sustained_ratio"), param("min_inflated_norm"))),
    T("grad_explosion", "warning", "inflated_at_least",
      r"a (\d+)x inflated level of at least ([\d.]+)", grad_inflated_floor,
      (param("sustained_ratio"), param("min_inflated_norm"))),
    T("grad_explosion", "warning", "burst_ratio",
      r"a burst \((\d+)\+ points at (\d+)x the run's level\) anywhere, the first steps included",
      grad_burst_ratio, (param("burst_points"), param("burst_ratio"))),
    T("grad_explosion", "warning", "burst_points",
      r"a burst \((\d+)\+ points at (\d+)x the run's level\)", grad_burst_points,
      (param("burst_points"), param("burst_ratio"))),
    T("grad_explosion", "critical", "inflation", r"(\d+)x inflation", grad_inflation_critical,
      (lambda p: 2 * p["sustained_ratio"],)),
    T("grad_explosion", "critical", "inflation_with_spikes", r"inflation with spikes",
      grad_inflation_spikes),
    T("grad_explosion", "critical", "nan_after_spikes", r"NaN after the spikes", grad_nan_after),
    T("grad_explosion", "critical", "burst_far", r"a burst at (\d+)x", grad_burst_far,
      (param("far_ratio"),)),
    T("grad_explosion", "critical", "burst_harm", r"a burst at \d+x or followed by harm",
      grad_burst_harm),
    T("grad_explosion", "critical", "one_update",
      r"one update at (\d+)x its recent level followed by harm", grad_one_update,
      (param("burst_ratio"),)),
    *[T("grad_explosion", "warning", name,
        r"one update at (\d+)x its recent level logged with KL ≥ (\d+) at twice its level "
        r"before, until (\d+) logged points after it show no harm", build,
        (param("burst_ratio"), None, None))
      for name, build in (("one_update_kl", grad_one_update_kl),
                          ("one_update_kl_judged", grad_one_update_kl_judged))],
    # numerical_failure
    T("numerical_failure", "warning", "statistic",
      r"NaN/inf only in a logged statistic \(KL, entropy\) while the loss and grad norm stayed "
      r"finite", nan_statistic),
    *[T("numerical_failure", "critical", f"in_{name}",
        r"NaN/inf in the loss, grad norm, reward or log-prob", _nan_in(column))
      for name, column in (("loss", "train__loss"), ("grad_norm", "train__grad_norm"),
                           ("reward", "train__reward"), ("log_prob", "rollout__old_log_prob"))],
    # no_learning_signal
    T("no_learning_signal", "warning", "flat_at_best",
      r"the reward flat at the best it ever reached with no gradient", nls_at_best),
    T("no_learning_signal", "critical", "dead_run", r"a dead run", nls_dead),
    T("no_learning_signal", "critical", "reward_band", r"the reward flat \(within (\d+)% of",
      nls_band, (param("reward_band", 0.01),)),
    T("no_learning_signal", "critical", "stretch_points",
      r"over the last (\d+)\+ logged points and (\d+)% of the log", nls_points,
      (param("min_points"), param("min_fraction", 0.01))),
    T("no_learning_signal", "critical", "stretch_share",
      r"over the last (\d+)\+ logged points and (\d+)% of the log", nls_fraction,
      (param("min_points"), param("min_fraction", 0.01))),
    T("no_learning_signal", "critical", "loss_zero", r"grad norm 0, or loss 0", nls_loss),
    T("no_learning_signal", "warning", "lr_level",
      r"the logged learning rate at ([\d.]+) of its peak or less over the last (\d+)\+ logged "
      r"points and (\d+)% of the log", nls_lr_level, (None, None, param("min_fraction", 0.01))),
    T("no_learning_signal", "warning", "lr_points",
      r"the logged learning rate at ([\d.]+) of its peak or less over the last (\d+)\+ logged "
      r"points and (\d+)% of the log", nls_lr_points, (None, None, param("min_fraction", 0.01))),
    T("no_learning_signal", "warning", "lr_share",
      r"the logged learning rate at ([\d.]+) of its peak or less over the last (\d+)\+ logged "
      r"points and (\d+)% of the log", nls_lr_share, (None, None, param("min_fraction", 0.01))),
    # ratio_instability
    T("ratio_instability", "warning", "ratio_max", r"ratio max > (\d+)", ratio_max,
      (param("max_ratio"),)),
    T("ratio_instability", "warning", "ratio_min", r"min < ([\d.]+)", ratio_min,
      (param("min_ratio"),)),
    T("ratio_instability", "warning", "clip_fraction", r"clip fraction > ([\d.]+)", ratio_clip,
      (param("clip_fraction"),)),
    T("ratio_instability", "warning", "is_ratio_max", r"IS ratio max > (\d+)", ratio_is,
      (param("is_ratio_max"),)),
    T("ratio_instability", "warning", "is_ratio_low", r"IS ratio max > \d+ \(or < 1/(\d+)\)",
      ratio_is_low, (param("is_ratio_max"),)),
    T("ratio_instability", "warning", "recent_share",
      r"on (\d+)%\+ of recent steps \(the last (\d+)%\)", ratio_late_share,
      (param("late_share", 0.01), None)),
    T("ratio_instability", "warning", "burst", r"or (half) of any (\d+) consecutive logged steps",
      ratio_burst, (param("burst_share"), param("burst_window"))),
    T("ratio_instability", "warning", "mismatch", r"mismatch up (\d+)x", ratio_mismatch,
      (param("mismatch_growth"),)),
    T("ratio_instability", "warning", "mismatch_significant",
      r"mismatch up \d+x in a significant rise", ratio_mismatch_significant),
    T("ratio_instability", "critical", "two", r"two of these", ratio_two),
    T("ratio_instability", "critical", "grad_rising", r"with grad norm rising significantly",
      ratio_grad),
    # reward_hacking
    T("reward_hacking", "warning", "efficiency",
      r"reward per sqrt\(KL\) falling below (\d+)% of its early value while KL climbs "
      r"significantly past (\d+)", hack_efficiency,
      (param("efficiency_drop", 0.01), param("min_kl"))),
    T("reward_hacking", "warning", "min_kl",
      r"reward per sqrt\(KL\) falling below (\d+)% of its early value while KL climbs "
      r"significantly past (\d+)", hack_min_kl,
      (param("efficiency_drop", 0.01), param("min_kl"))),
    T("reward_hacking", "warning", "kl_significant", r"while KL climbs significantly",
      hack_kl_significant),
    T("reward_hacking", "warning", "cheat_recent",
      r"negative on (\d+)%\+ of the last half of the log \(or (\d+)%\+ of all of it\)",
      hack_cheat_recent, (param("cheat_share", 0.01), lambda p: 2 * p["cheat_share"] * 100)),
    T("reward_hacking", "warning", "cheat_overall",
      r"negative on (\d+)%\+ of the last half of the log \(or (\d+)%\+ of all of it\)",
      hack_cheat_overall, (param("cheat_share", 0.01), lambda p: 2 * p["cheat_share"] * 100)),
    T("reward_hacking", "critical", "heldout_turnover",
      r"the held-out score turning over \((\d+)% of its peak lost",
      hack_heldout, (param("heldout_drop", 0.01),)),
    T("reward_hacking", "critical", "heldout_noise",
      r"and (\d+)x its evaluation-to-evaluation noise", hack_heldout_noise),
    T("reward_hacking", "critical", "two_forms", r"two forms at once", hack_two_forms),
    T("reward_hacking", "critical", "crash_took_both",
      r"not when the train reward fell with it, by (a quarter) of its range and beyond its "
      r"noise", hack_crash_took_both),
    # length_hacking
    T("length_hacking", "warning", "truncated", r"^> (\d+)% truncated at the cap", len_truncated,
      (param("truncation", 0.01),)),
    T("length_hacking", "warning", "budget_share", r"(\d+)%\+ truncated over the whole run",
      len_budget_share, (param("budget_share", 0.01),)),
    T("length_hacking", "warning", "budget_third", r"(half) or more on (a third) of the steps",
      len_budget_third, (param("truncation"), None)),
    T("length_hacking", "warning", "budget_costs", r"with the cut steps scoring lower",
      len_budget_costs),
    T("length_hacking", "warning", "growth", r"a significant rise x([\d.]+) without reward for it",
      len_growth, (param("growth"),)),
    T("length_hacking", "warning", "growth_significant", r"a significant rise x",
      len_growth_significant),
    T("length_hacking", "warning", "collapse", r"length falling to < (\d+)% of its start",
      len_collapse, (param("collapse_ratio", 0.01),)),
    T("length_hacking", "warning", "collapse_came_back", r"or a collapse it came back from",
      len_collapse_back),
    T("length_hacking", "critical", "truncated", r"^> (\d+)% truncated,", len_truncated_critical,
      (param("truncation_critical", 0.01),)),
    T("length_hacking", "critical", "few_tokens", r"a length collapsed to (\d+) tokens",
      len_tokens),
    T("length_hacking", "critical", "reward_not_improving",
      r"pinned or collapsed with the reward not improving", len_stalled),
    T("length_hacking", "critical", "reward_not_improving_points",
      r"with the reward not improving \((\d+)\+ logged lengths\)", len_stalled_points),
    # format_gaming
    T("format_gaming", "warning", "share", r"format terms carry > (\d+)% of a significant",
      fmt_share, (param("format_share", 0.01),)),
    T("format_gaming", "warning", "min_gain",
      r"format terms carry > (\d+)% of a significant reward gain \((\d+)%\+ of its range\)",
      fmt_min_gain, (param("format_share", 0.01), param("min_gain", 0.01))),
    T("format_gaming", "warning", "significant", r"of a significant reward gain",
      fmt_significant),
    T("format_gaming", "warning", "correctness_improving", r"while no correctness term improves",
      fmt_correctness),
    T("format_gaming", "critical", "heldout_falling", r"with the held-out score falling",
      fmt_heldout),
    T("format_gaming", "critical", "never_moved",
      r"a correctness term that never moved over (\d+)\+ logged steps", fmt_long_log,
      (param("long_log"),)),
    T("format_gaming", "critical", "flat",
      r"over (\d+)\+ logged steps \(no answer ever right\), or one that never left its level",
      fmt_flat, (param("long_log"),)),
    # tool_spam
    T("tool_spam", "warning", "surge", r"calls x(\d+) \(and (\d+)\+ more per sample\)",
      tool_surge, (param("surge"), param("min_calls"))),
    T("tool_spam", "warning", "min_calls", r"calls x(\d+) \(and (\d+)\+ more per sample\)",
      tool_min_calls, (param("surge"), param("min_calls"))),
    T("tool_spam", "warning", "significant", r"with a significant rise", tool_significant),
    T("tool_spam", "critical", "reward_not_improving", r"with the reward not improving",
      tool_stalled),
    # tool_failure
    T("tool_failure", "warning", "late_share", r"(\d+)%\+ of calls failing over the end",
      fail_late, (param("fail_share", 0.01),)),
    T("tool_failure", "critical", "never_worked", r"(\d+)%\+ failing late and over the first",
      fail_broken, (param("broken_share", 0.01),)),
    # reward_overfit
    T("reward_overfit", "warning", "giveback",
      r"gives back > (\d+)% of its gain \(the peak (\d+)%\+ of the log before its end\)",
      overfit_giveback, (param("giveback", 0.01), param("min_after", 0.01))),
    T("reward_overfit", "warning", "after_peak",
      r"gives back > (\d+)% of its gain \(the peak (\d+)%\+ of the log before its end\)",
      overfit_after, (param("giveback", 0.01), param("min_after", 0.01))),
    T("reward_overfit", "warning", "crash_share",
      r"a crash \((\d+)% of its range within (\d+) points, and (\d+)% of its largest value\) "
      r"it came back from", overfit_crash,
      (param("crash_share", 0.01), param("crash_points"), None)),
    T("reward_overfit", "warning", "crash_points",
      r"a crash \((\d+)% of its range within (\d+) points, and (\d+)% of its largest value\) "
      r"it came back from",
      overfit_crash_points, (param("crash_share", 0.01), param("crash_points"), None)),
    T("reward_overfit", "warning", "crash_magnitude",
      r"a crash \((\d+)% of its range within (\d+) points, and (\d+)% of its largest value\) "
      r"it came back from", overfit_crash_magnitude),
    T("reward_overfit", "critical", "giveback", r"> (\d+)% given back", overfit_critical,
      (param("giveback_critical", 0.01),)),
    T("reward_overfit", "critical", "crash_never_back", r"a crash it never came back from",
      overfit_crash_stays),
    # entropy_blowup
    *[T("entropy_blowup", "warning", name,
        r"up > (\d+)% and ([\d.]+)\+ nats from its post-warm-up low, in a significant climb or "
        r"held for (\d+)\+ logged points; not when the reward pays for a rise under (\d+)%",
        build, (param("rise", 0.01), param("min_rise"), None,
                lambda p: 2 * p["rise"] * 100))
      for name, build in (("rise", blowup_rise), ("min_nats", blowup_min_rise),
                          ("held", blowup_held), ("paid_limit", blowup_paid_limit))],
    T("entropy_blowup", "warning", "significant", r"in a significant climb", blowup_significant),
    T("entropy_blowup", "warning", "climbing_at_end",
      r"still climbing where the log ends \(each of its last two points ([\d.]+)\+ nats above "
      r"the one before", blowup_at_end, (param("min_rise"),)),
    T("entropy_blowup", "warning", "paid_by_reward", r"not when the reward pays", blowup_paid),
    T("entropy_blowup", "critical", "grad_rising", r"with grad norm rising", blowup_grad),
    T("entropy_blowup", "critical", "reward_falling", r"or the reward falling", blowup_reward),
    # no_progress
    T("no_progress", "warning", "points", r"over (\d+)\+ logged points nothing improved",
      np_points, (param("min_points"),), short_skips=True),
    T("no_progress", "warning", "below_best",
      r"over (\d+)\+ logged points nothing improved, the reward sits (a quarter) of its range "
      r"below its best", np_below_best, (param("min_points"), param("best_margin"))),
    T("no_progress", "warning", "backwards", r"the reward or the task's score went backwards",
      np_backwards),
    T("no_progress", "warning", "stuck_points",
      r"or over (\d+)\+ logged points a 0-1 task score \(held-out, correctness\) never improved",
      np_stuck_points, (param("patience"),)),
    T("no_progress", "warning", "stuck_low",
      r"over (\d+)\+ logged points a 0-1 task score \(held-out, correctness\) never improved "
      r"and ends below ([\d.]+)", np_stuck_low, (param("patience"), param("low_score"))),
    T("no_progress", "warning", "gain_not_carried",
      r"the reward up (a quarter) of its range or more while a held-out score never improved "
      r"over (\d+)\+ logged points and ends below ([\d.]+)", np_gain_not_carried,
      (param("best_margin"), param("patience"), param("low_score"))),
    T("no_progress", "warning", "held_back",
      r"over (\d+)\+ logged points, a 0-1 task score below ([\d.]+) at the end \(or below "
      r"([\d.]+) and its last quarter less than ([\d.]+) above its third\) while KL stayed "
      r"under ([\d.]+) with beta (\d+) or more", np_held_back,
      (param("patience"), param("low_score"), None, None, None, None)),
    T("no_progress", "warning", "stopped_short_level",
      r"\(or below ([\d.]+) and its last quarter less than ([\d.]+) above its third\)",
      np_stopped_short_level),
    T("no_progress", "warning", "stopped_short_gain",
      r"\(or below ([\d.]+) and its last quarter less than ([\d.]+) above its third\)",
      np_stopped_short_gain),
    T("no_progress", "warning", "memorised_from_start",
      r"at ([\d.]+)\+ over the log's first (\d+)% already, nothing was learned",
      np_memorised_from_start, short_words="learned its training set"),
    T("no_progress", "warning", "never_moved",
      r"or over (\d+)\+ logged points nothing improved while KL stayed below ([\d.]+) to the "
      r"end", np_never_moved, (param("patience"), None)),
    *(T("no_progress", "warning", f"moved_for_nothing_{what}",
        r"or over (\d+)\+ logged points the reward never left its level \(its best within twice "
        r"its step noise of its start\) while most groups had mixed rewards over the last fifth "
        r"and the policy moved \(KL up to ([\d.]+)\+ and twice its first points, or the entropy "
        r"(\d+)%\+ off its first points\)", build, (param("patience"), None, None))
      for what, build in (("points", np_moved_points), ("kl", np_moved_kl),
                          ("entropy", np_moved_entropy))),
    T("no_progress", "warning", "stuck_reward",
      r"over (\d+)\+ logged points a 0-1 task score \(held-out, correctness\) never improved "
      r"and ends below ([\d.]+), the reward up less than (a quarter) of its range",
      np_stuck_reward, (param("patience"), param("low_score"), param("best_margin"))),
    T("no_progress", "warning", "material_gain",
      r"improved: the mean of its last fifth ([\d.]+)\+ above its first fifth's, or "
      r"([\d.]+)x it; a significant crawl of ([\d.]+) -> ([\d.]+) is not", np_material),
    *(T("no_progress", "warning", f"plateau_{what}",
        r"or the held-out score rose, then gained under ([\d.]+) over its last half while the "
        r"training score gained more and ends at ([\d.]+)\+ and ([\d.]+)\+ above it", build)
      for what, build in (("gain", np_plateau_gain), ("train", np_plateau_train),
                          ("gap", np_plateau_gap))),
    T("no_progress", "warning", "memorised",
      r"a 0/1 training score at ([\d.]+)\+\) while a held-out score never rose by ([\d.]+) and "
      r"ends below ([\d.]+), ([\d.]+)\+ below the training score", np_memorised),
]


# --- the tests -----------------------------------------------------------------------------


def test_every_rule_has_a_row_and_every_row_a_rule():
    table = read_table()
    assert set(table) == {r.id for r in RULES}, sorted(set(table) ^ {r.id for r in RULES})
    for mode, row in table.items():
        assert all(row.get(level) for level in LEVELS), (mode, row)


def test_the_table_is_read_as_written():
    """The parser reads the cells a reader sees (a broken row would hide thresholds)."""
    row = read_table()["kl_drift"]
    assert row["signal"] == "KL to the reference"
    assert row["critical"].startswith("sustained KL > 10, or > 5 with reward not improving")
    assert read_table()["no_progress"]["critical"] == "-"


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("mode", [r.id for r in RULES])
def test_every_number_in_the_table_is_a_tested_threshold(mode, level):
    """Each number a cell states is inside a phrase a threshold below tests, and each level
    a row fills has at least one tested threshold: the table cannot gain a number the tests
    do not hold the code to."""
    cell = read_table()[mode][level]
    mine = [t for t in THRESHOLDS if t.mode == mode and t.level == level]
    if cell == "-":
        assert not mine
        return
    assert mine, f"{mode} {level}: no threshold tested"
    covered = np.zeros(len(cell), dtype=bool)
    for t in mine:
        for m in re.finditer(t.phrase, cell):
            covered[m.start():m.end()] = True
    loose = [m.group() for m in re.finditer(r"\d+(?:[.,]\d+)*", cell)
             if not covered[m.start():m.end()].all()]
    assert not loose, f"{mode} {level}: numbers no threshold tests: {loose} in {cell!r}"


@pytest.mark.parametrize("threshold", [t for t in THRESHOLDS if any(t.defaults)],
                         ids=lambda t: t.id)
def test_the_tables_number_is_the_rules_default(threshold: Threshold):
    """A number the table states that a rule parameter sets is that parameter's default
    (numbers fixed in the code are held by the runs of ``test_threshold`` alone)."""
    numbers = threshold.numbers(read_table()[threshold.mode][threshold.level])
    defaults = rule_named(threshold.mode).defaults()
    for number, default in zip(numbers, threshold.defaults):
        if default is not None:
            assert number == pytest.approx(default(defaults)), (threshold.id, number)


CASES = [pytest.param(t, past, id=f"{t.id}-{'just_past' if past else 'just_short'}")
         for t in THRESHOLDS for past in (True, False)]


@pytest.mark.parametrize(("threshold", "past"), CASES)
def test_threshold(threshold: Threshold, past: bool):
    """Just past the table's threshold the check gives at least the cell's status; just short
    of it, a judged status below it (ok or a warning, not skipped unless the threshold is a
    minimum of points)."""
    numbers = threshold.numbers(read_table()[threshold.mode][threshold.level])
    check = status_of(threshold.build(numbers, past), threshold.mode)
    level = Status(threshold.level).rank
    if past:
        assert check.status.rank >= level, (check.status.value, check.summary)
    elif threshold.short_words is not None:
        assert check.status.rank <= level and threshold.short_words in check.summary, (
            check.status.value, check.summary)
    else:
        allowed = (Status.SKIPPED, Status.OK, Status.WARNING) if threshold.short_skips else (
            Status.OK, Status.WARNING)
        assert check.status in allowed and check.status.rank < level, (check.status.value,
                                                                       check.summary)


def test_the_issue_run_at_9_percent_of_its_start_is_a_collapse():
    """Issue 23: 0.436 -> 0.0376 nats over 49 logs, 90% of groups equal, completions of 2-5
    tokens: "91% lost: no collapse" because its trend test gave p = 0.0108 against alpha
    0.01. Below 10% of its start is critical whatever the p-value."""
    n = 49
    t = np.arange(n)
    h = np.abs(0.0376 + (0.436 - 0.0376) * np.exp(-np.clip(t - 2, 0, None)) + ar1(13, n, 0.01,
                                                                                   0.8))
    rng = np.random.default_rng(0)
    run = make_run(train__entropy=h,
                   train__frac_reward_zero_std=np.clip(0.9 + ar1(1, n, 0.02), 0, 1),
                   train__completion_length=rng.integers(2, 6, n).astype(float),
                   train__reward=0.1 + ar1(2, n, 0.02))
    check = status_of(run, "entropy_collapse")
    assert 0.01 < check.evidence["trend_p"] < 0.05  # the issue's p, against alpha 0.01
    assert check.status is Status.CRITICAL, check.summary
    assert check.summary.startswith("entropy collapsed: entropy fell 91%")
    # Without anything corroborating it, the level alone still decides.
    alone = status_of(make_run(train__entropy=h), "entropy_collapse")
    assert alone.status is Status.CRITICAL, alone.summary
