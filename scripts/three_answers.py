"""One fitted object, three answers, on the shared prediction files of published models:
a conformal predictor on temperature scaling fitted on a seeded half of each file, then on
the other half its sets at alpha = 0.05 (coverage and size) and its selective prediction
at 80% and 90% coverage (the risk it predicts from its calibration rows, with the 95%
upper bound, against the risk measured on the held-out half).

Usage (from the repository root; the defaults shown):
    .venv/bin/python scripts/three_answers.py --data ../shared/data/predictions \
        --out docs/three-answers.tables.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import calibkit as ck


def rows(path: Path, seed: int = 0) -> list[str]:
    d = np.load(path)
    z = (
        np.log(np.clip(d["probs"], np.finfo(np.float64).tiny, None))
        if "probs" in d
        else d["logits"]
    )
    y = d["labels"]
    order = np.random.default_rng(seed).permutation(y.shape[0])
    cal, test = order[: y.shape[0] // 2], order[y.shape[0] // 2 :]
    cp = ck.ConformalClassifier(ck.RAPS(), alpha=0.1, calibrator="temperature")
    cp.fit(z[cal], y[cal])
    out = []
    for coverage in (0.8, 0.9):
        a = cp.predict_all(z[test], alpha=0.05, coverage=coverage)
        sel = cp.selective(coverage)
        wrong = a.probs.argmax(1) != y[test]
        covered = a.sets[np.arange(test.shape[0]), y[test]]
        out.append(
            f"| {path.stem} | {y.shape[0]:,} | {z.shape[1]} | {100 * covered.mean():.1f} | "
            f"{a.sets.sum(1).mean():.2f} | {100 * coverage:.0f} | {100 * a.accept.mean():.1f} | "
            f"{100 * sel.risk:.2f} | {100 * sel.risk_upper:.2f} | "
            f"{100 * wrong[a.accept].mean():.2f} |"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/data/predictions")
    parser.add_argument("--out", default="docs/three-answers.tables.md")
    args = parser.parse_args()
    lines = [
        "| file | rows | classes | sets@0.05 coverage % | mean set size | coverage asked % | "
        "answered (test) % | risk predicted % | 95% upper % | risk measured (test) % |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for path in sorted(Path(args.data).glob("*.npz")):
        lines += rows(path)
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
