"""The README's Python quick starts run as written (the first on the real predictions file)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.conftest import shared_path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_quick_start_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = shared_path("predictions/cifar10_resnet18.npz")
    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert block is not None, "README has no python block"
    code = block.group(1).replace('"cifar10_resnet18.npz"', repr(str(data)))
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert 1.2 < namespace["ts"].temperature_ < 2.0
    assert (tmp_path / "ts.json").exists()


def test_pytorch_quick_start_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    code = next((block for block in blocks if "ck.CalibratedModel(" in block), None)
    assert code is not None, "README has no PyTorch block"
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert (tmp_path / "calibrated.onnx").exists()
    deployed, x = namespace["deployed"], namespace["x"]
    probs = namespace["program"].module()(x)  # type: ignore[attr-defined]
    assert torch.allclose(probs, deployed(x))  # type: ignore[operator]


def test_streaming_quick_start_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    code = next((block for block in blocks if "ck.StreamingCalibration(" in block), None)
    assert code is not None, "README has no streaming block"
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert 0.0 < namespace["metric"].compute()["ece"] < 1.0  # type: ignore[attr-defined]


def _block(marker: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    code = next((b for b in blocks if marker in b), None)
    assert code is not None, f"README has no python block with {marker!r}"
    return code


def test_the_one_object_three_answers_snippet_runs() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(_block("cp.predict_all("), "README.md", "exec"), namespace)
    answers, cp = namespace["answers"], namespace["cp"]
    assert answers.probs.shape == (2000, 10)
    assert answers.accept.dtype == bool
    assert abs(float(answers.accept.mean()) - 0.8) < 0.05  # the coverage asked for
    assert torch.equal(namespace["accept"], torch.from_numpy(answers.accept))
    assert cp.selective(0.8).risk <= cp.selective(0.8).risk_upper


def test_the_conformal_snippet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import calibkit as ck

    data = shared_path("predictions/cifar10_resnet18.npz")
    code = _block("ck.ConformalClassifier(score=").replace(
        '"cifar10_resnet18.npz"', repr(str(data))
    )
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    loaded = ck.load(tmp_path / "raps.json")
    assert (loaded.predict_set(namespace["logits"][5000:]) == namespace["sets"]).all()


def test_the_label_shift_snippet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import calibkit as ck

    data = shared_path("predictions/cifar10_resnet18.npz")
    code = _block("ck.PriorShiftAdapter(").replace('"cifar10_resnet18.npz"', repr(str(data)))
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    loaded = ck.load(tmp_path / "label_shift.json")
    assert (loaded.target_priors_ == namespace["adapter"].target_priors_).all()
    assert float(loaded.target_priors_[:3].sum()) > 0.5  # classes 0-2 made frequent


def test_group_snippet_runs() -> None:
    import textwrap

    import numpy as np

    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    code = next((b for b in blocks if "evaluate_groups(labels" in b), None)
    assert code is not None, "README has no per-group block"
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(10_000, 3)) * 2
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    labels = (rng.random(10_000)[:, None] > p.cumsum(1)).sum(1)
    site = np.where(rng.random(10_000) < 0.5, "a", "b")
    logits[site == "b"] *= 3  # group b overconfident
    import calibkit as ck

    namespace: dict[str, object] = {"ck": ck, "labels": labels, "logits": logits, "site": site}
    namespace["probs"] = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    exec(compile(textwrap.dedent(code), "README.md", "exec"), namespace)
    gts: Any = namespace["gts"]
    temps = dict(zip(gts.group_names_, gts.group_temperatures_.tolist(), strict=True))
    assert namespace["res"].worst_group == "b"  # type: ignore[attr-defined]
    assert temps["a"] < 1.2 < 2.5 < temps["b"]


ROOT = README.parent
#: The documents checked for broken references: the README, the contributor guide, the
#: library's pages and each reproduction's write-up and reports.
DOCUMENTS = sorted(
    [
        README,
        ROOT / "CONTRIBUTING.md",
        ROOT / "benchmarks" / "README.md",
        *(ROOT / "docs").rglob("*.md"),
        *(ROOT / "experiments").rglob("*.md"),
    ]
)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
#: A config path in a command: ``calibkit [--threads N] study PATH`` or ``python DRIVER PATH``.
COMMAND = re.compile(
    r"(?:calibkit(?:\s+--threads\s+\d+)?\s+study|python3?\s+(\S+\.py))\s+([\w./-]+/[\w.-]+\.toml)"
)


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to ``-``.

    >>> _slug("The paper's remaining figures (1d, 2, 4)")
    'the-papers-remaining-figures-1d-2-4'
    """
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def broken_references(document: Path) -> list[str]:
    """Every relative link of ``document`` whose file (or heading) is absent, and every config
    or driver its commands name that is absent (commands run from the repository root)."""
    text = document.read_text(encoding="utf-8")
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # http(s), mailto
            continue
        file, _, anchor = target.partition("#")
        path = (document.parent / file) if file else document
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md":
            headings = re.findall(r"^#+\s+(.*)$", path.read_text(encoding="utf-8"), re.M)
            if anchor not in {_slug(h) for h in headings}:
                broken.append(target)
    for driver, config in COMMAND.findall(text):
        broken += [p for p in (driver, config) if p and not (ROOT / p).is_file()]
    return broken


def test_the_checked_documents_include_every_write_up() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in DOCUMENTS}
    assert {"docs/README.md", "experiments/wang2021/README.md", "CONTRIBUTING.md"} <= names


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_reference_in_the_documents_exists(document: Path) -> None:
    assert broken_references(document) == []


def test_a_broken_reference_is_found(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# A heading\n", encoding="utf-8")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "[ok](there.md#a-heading) [gone](docs/seed-study.md) [bad anchor](there.md#nope)\n"
        "[web](https://example.org/x) [here](#top)\n"
        "    calibkit study configs/seed_bird_cat.toml --out runs/seed\n"
        "    calibkit study experiments/seed_study/configs/seed_bird_cat.toml\n"
        "    python experiments/wang2021/study.py configs/wang2021_birdcat.toml\n",
        encoding="utf-8",
    )
    assert broken_references(doc) == [
        "docs/seed-study.md",
        "there.md#nope",
        "#top",
        "configs/seed_bird_cat.toml",
        "configs/wang2021_birdcat.toml",
    ]


def test_the_shift_snippet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a synthetic cifar10-jpeg.zip (16 images a class) and a ResNet-20 with random
    weights, so it runs without ../shared; the sizes cut to fit."""
    from calibkit.models import create_model
    from tests.data.synthetic import cifar10_jpeg_zip

    cifar10_jpeg_zip(tmp_path / "data", per_class=16)
    torch.manual_seed(0)
    torch.save(create_model("resnet20", 10).state_dict(), tmp_path / "resnet20-12fca82f.th")
    code = _block("ck.run_shift(").replace("cal_size=1000", "cal_size=60")
    code = code.replace("test_size=500", "test_size=40")
    assert "cal_size=60" in code
    assert "test_size=40" in code
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["result"].n_test == 40
    assert namespace["report"].document.verdict.headline.startswith("Calibration ")
    assert (tmp_path / "shift" / "report.html").exists()
    assert (tmp_path / "shift" / "config.json").exists()
