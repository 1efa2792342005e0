"""How often ``compare`` says two runs part when they do not, and finds it when they do, on
synthetic curves (``trends.divergence.parting``), by the number of logged points.

    python bench/compare_accuracy.py                 # every table, 200 pairs per cell
    python bench/compare_accuracy.py --pairs 50      # a quicker look

* **seeds**: two seeds of one rising curve (0.5 -> 0.9, as a reward) with AR(1) noise of sd
  0.1 per innovation: the share of pairs that part on it (false partings), by lag-1
  correlation. TRL logs every 5-10 steps, so 20-60 points is the normal case.
* **blip**: the same, with a 3-point excursion of 20x the noise in one run at a quarter of the
  log (the 3-log entropy excursion of a real run that recovered): still no parting wanted.
* **jump**: an entropy-like curve (0.1 with 10% noise) that jumps 100x at 70% of the log in
  one run: the share found, and the median parting step against the jump's.
* **shift**: one run lifted by 1, 2 or 4 noise units from 70% of the log: the share found.
* **held gap alone**: seed pairs with the sustained test out of reach (``persist`` beyond the
  log), Gaussian or Student-t(3) AR(1) noise at lag-1 correlations 0.8 and 0.9: how often the
  gap-held-to-the-end test alone calls noise a parting.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.signal import lfilter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from grpo_doctor.trends.divergence import parting

LENGTHS = (20, 30, 40, 60, 100, 250, 1000)
RHOS = (0.0, 0.3, 0.6, 0.8)


def ar1(rng: np.random.Generator, n: int, sigma: float, rho: float) -> np.ndarray:
    return lfilter([1.0], [1.0, -rho], rng.normal(0, sigma, n))


def rising(n: int) -> np.ndarray:
    """A reward-like curve: 0.5 rising to ~0.9 over the log, whatever its length."""
    x = np.arange(n) / n * 250
    return 0.5 + 0.4 * (1 - np.exp(-x / 80))


def seeds(n: int, rho: float, pairs: int, blip: bool = False, heavy: bool = False,
          held_only: bool = False) -> float:
    """The share of seed pairs of one curve that part (``heavy``: Student-t(3) innovations;
    ``held_only``: by the held-gap test alone)."""
    rng = np.random.default_rng(1000 * n + int(rho * 10) + 7 * heavy)
    steps = np.arange(1, n + 1, dtype=np.float64)
    base, parted = rising(n), 0
    persist = n + 1 if held_only else 4

    def noise() -> np.ndarray:
        if heavy:
            return lfilter([1.0], [1.0, -rho], 0.05 * rng.standard_t(3, n))
        return ar1(rng, n, 0.1, rho)

    for _ in range(pairs):
        a, b = base + noise(), base + noise()
        if blip:
            at = n // 4
            b[at:at + 3] += 20 * 0.1
        parted += parting(steps, a, b, persist=persist) is not None
    return parted / pairs


def jump(n: int, pairs: int, factor: float = 100.0) -> tuple[float, float | None]:
    """Share of entropy-like pairs found when one jumps ``factor``x at 70% of the log, and
    the median distance (in points) of the parting step from the jump."""
    rng = np.random.default_rng(7 * n)
    steps = np.arange(1, n + 1, dtype=np.float64)
    at = int(0.7 * n)
    found, offsets = 0, []
    for _ in range(pairs):
        a = 0.1 * (1 + 0.1 * rng.standard_normal(n))
        b = 0.1 * (1 + 0.1 * rng.standard_normal(n))
        b[at:] *= factor
        p = parting(steps, a, b)
        if p is not None:
            found += 1
            offsets.append(p.step - steps[at])
    return found / pairs, float(np.median(offsets)) if offsets else None


def shift(n: int, units: float, pairs: int, rho: float = 0.3) -> float:
    """Share of pairs found when one run is lifted by ``units`` of its noise from 70%."""
    rng = np.random.default_rng(11 * n + int(units))
    steps = np.arange(1, n + 1, dtype=np.float64)
    base, at, found = rising(n), int(0.7 * n), 0
    sd = 0.1 / np.sqrt(1 - rho**2)  # the stationary sd of the AR(1) noise
    for _ in range(pairs):
        a = base + ar1(rng, n, 0.1, rho)
        b = base + ar1(rng, n, 0.1, rho)
        b[at:] += units * sd
        found += parting(steps, a, b) is not None
    return found / pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    args = parser.parse_args()
    pairs = args.pairs

    def pct(x: float) -> str:
        return f"{100 * x:5.1f}%"

    print(f"seeds of one curve: share of {pairs} pairs that part (false partings)")
    print("points " + "".join(f"  rho {r:<4}" for r in RHOS) + "  blip (rho 0.3)")
    for n in LENGTHS:
        cells = "".join(f"     {pct(seeds(n, r, pairs))}" for r in RHOS)
        print(f"{n:>6} {cells}     {pct(seeds(n, 0.3, pairs, blip=True))}")
    print()
    print(f"found of {pairs} pairs: a 100x jump at 70% (median parting step - jump step, "
          "points); a lift of 1, 2, 4 noise units at 70% (rho 0.3)")
    print("points   jump  offset    1 sd    2 sd    4 sd")
    for n in LENGTHS:
        share, offset = jump(n, pairs)
        off = f"{offset:+6.1f}" if offset is not None else "     –"
        lifts = "  ".join(pct(shift(n, u, pairs)) for u in (1, 2, 4))
        print(f"{n:>6} {pct(share)}  {off}  {lifts}")
    print()
    print(f"the held-gap test alone: share of {pairs} seed pairs that part")
    print("points  gauss 0.8  gauss 0.9     t3 0.8     t3 0.9")
    for n in LENGTHS:
        cells = "".join(f"     {pct(seeds(n, r, pairs, heavy=h, held_only=True))}"
                        for h in (False, True) for r in (0.8, 0.9))
        print(f"{n:>6}{cells}")


if __name__ == "__main__":
    main()
