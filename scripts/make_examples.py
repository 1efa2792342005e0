"""Generate the example runs bundled in grpo_doctor/examples/ (synthetic, seeded).

    python scripts/make_examples.py

Each is a wide CSV with a framework's own metric names (TRL's ``train/...`` or verl's
``actor/...``), AR(1) noise so the curves are as autocorrelated as real ones, and one failure
mode built in at a known step (written in the file name's docstring below). They exist so the
quick start works anywhere; the real-run evaluation uses real logs (see bench/).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent.parent / "grpo_doctor" / "examples"
N = 800


def ar1(rng: np.random.Generator, n: int, sigma: float, rho: float = 0.6) -> np.ndarray:
    e = rng.normal(0, sigma, n)
    out = np.empty(n)
    out[0] = e[0]
    for i in range(1, n):
        out[i] = rho * out[i - 1] + e[i]
    return out


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def base(rng: np.random.Generator) -> dict[str, np.ndarray]:
    t = np.arange(1, N + 1)
    return {
        "t": t,
        "reward": 0.2 + 0.5 * sigmoid((t - 250) / 90) + ar1(rng, N, 0.02),
        "entropy": 0.9 * np.exp(-t / 2500) + ar1(rng, N, 0.015),
        "kl": 0.0004 * t + np.abs(ar1(rng, N, 0.01)),
        "grad": 0.35 + 0.05 * np.abs(ar1(rng, N, 0.5)),
        "zsf": np.clip(0.2 + ar1(rng, N, 0.04), 0, 1),
        "len": 320 + 40 * sigmoid((t - 300) / 100) + ar1(rng, N, 6),
        "lr": np.full(N, 1e-6),
    }


def trl(d: dict[str, np.ndarray]) -> pd.DataFrame:
    return pd.DataFrame({
        "train/global_step": d["t"], "train/reward": d["reward"],
        "train/reward_std": np.clip(0.35 * (1 - d["zsf"]), 0, None),
        "train/entropy": d["entropy"], "train/kl": d["kl"], "train/grad_norm": d["grad"],
        "train/learning_rate": d["lr"], "train/frac_reward_zero_std": d["zsf"],
        "train/completions/mean_length": d["len"],
    })


def verl(d: dict[str, np.ndarray]) -> pd.DataFrame:
    out = {
        "step": d["t"], "critic/score/mean": d["reward"], "actor/entropy": d["entropy"],
        "actor/kl_loss": d["kl"], "actor/grad_norm": d["grad"], "actor/lr": d["lr"],
        "response_length/mean": d["len"],
    }
    if "logp" in d:
        out["rollout/old_log_prob"] = d["logp"]
    return pd.DataFrame(out)


def healthy() -> pd.DataFrame:
    return trl(base(np.random.default_rng(1)))


def entropy_collapse() -> pd.DataFrame:
    """Entropy collapses from step ~350 (lr too high); reward plateaus then sags; zero-std
    groups climb to ~85%."""
    rng = np.random.default_rng(2)
    d = base(rng)
    t = d["t"]
    fall = np.clip((t - 350) / 250, 0, None)
    d["entropy"] = 0.9 * np.exp(-t / 2500) * np.exp(-3.2 * fall) + np.abs(ar1(rng, N, 0.004))
    d["reward"] = (0.2 + 0.45 * sigmoid((t - 250) / 90) - 0.12 * np.clip((t - 550) / 250, 0, 1)
                   + ar1(rng, N, 0.02))
    d["zsf"] = np.clip(0.2 + 0.65 * sigmoid((t - 560) / 60) + ar1(rng, N, 0.03), 0, 1)
    d["lr"] = np.full(N, 5e-6)
    return trl(d)


def kl_drift() -> pd.DataFrame:
    """beta too small: KL climbs from step ~300 to ~12 while the score stalls."""
    rng = np.random.default_rng(3)
    d = base(rng)
    t = d["t"]
    d["kl"] = 0.05 + 12 * np.clip((t - 300) / 500, 0, None) ** 1.5 + np.abs(ar1(rng, N, 0.05))
    d["reward"] = 0.3 + 0.25 * sigmoid((t - 200) / 60) + ar1(rng, N, 0.02)
    return verl(d)


def likelihood_displacement() -> pd.DataFrame:
    """LLD (verl names, RAGEN's rollout/old_log_prob): log-prob drifts down from step ~250
    while the score still rises; the grad norm inflates near the end."""
    rng = np.random.default_rng(4)
    d = base(rng)
    t = d["t"]
    d["logp"] = -0.45 - 0.5 * np.clip((t - 250) / 500, 0, None) ** 1.2 + ar1(rng, N, 0.01)
    d["grad"] = 0.35 * (1 + 3 * np.clip((t - 600) / 200, 0, None) ** 2) + 0.05 * np.abs(
        ar1(rng, N, 0.5))
    return verl(d)


def grad_explosion() -> pd.DataFrame:
    """No gradient clipping: recurring grad-norm spikes from step ~500, NaN loss at 740."""
    rng = np.random.default_rng(5)
    d = base(rng)
    frame = trl(d)
    g = frame["train/grad_norm"].to_numpy().copy()
    for s in (500, 560, 610, 650, 690, 720):
        g[s] *= rng.uniform(8, 20)
    g[730:] *= 12
    frame["train/grad_norm"] = g
    loss = 0.01 * ar1(rng, N, 1.0)
    loss = loss.astype(object)
    loss[739:] = "nan"
    frame["train/loss"] = loss
    return frame


def advantage_collapse() -> pd.DataFrame:
    """Task too easy for G=4: from step ~300 nearly every group is all-correct or all-wrong."""
    rng = np.random.default_rng(6)
    d = base(rng)
    t = d["t"]
    d["zsf"] = np.clip(0.3 + 0.62 * sigmoid((t - 300) / 40) + ar1(rng, N, 0.03), 0, 1)
    d["reward"] = 0.3 + 0.1 * sigmoid((t - 200) / 60) + ar1(rng, N, 0.02)
    return trl(d)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, make in {
        "healthy": healthy, "entropy-collapse": entropy_collapse, "kl-drift": kl_drift,
        "likelihood-displacement": likelihood_displacement, "grad-explosion": grad_explosion,
        "advantage-collapse": advantage_collapse,
    }.items():
        make().to_csv(OUT / f"{name}.csv", index=False, float_format="%.6g")
        print("wrote", OUT / f"{name}.csv")


if __name__ == "__main__":
    main()
