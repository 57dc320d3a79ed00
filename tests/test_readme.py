"""Every reference of the documents exists; the shift snippet of docs/shift.md runs offline.

(Every code block of the README and docs/ runs in ``tests/test_docs_run.py``.)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import torch

README = Path(__file__).resolve().parents[1] / "README.md"


ROOT = README.parent
#: The documents checked for broken references: the README, the contributor guide, the
#: library's pages and each reproduction's write-up and reports.
DOCUMENTS = sorted(
    [
        README,
        ROOT / "CONTRIBUTING.md",
        ROOT / "CHANGELOG.md",
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
    weights, so it runs without ../shared (``tests/test_docs_run.py`` runs it as written, on
    the real data, in the slow run); the sizes cut to fit."""
    from calibkit.models import create_model
    from tests.data.synthetic import cifar10_jpeg_zip

    cifar10_jpeg_zip(tmp_path / "data", per_class=16)
    torch.manual_seed(0)
    torch.save(create_model("resnet20", 10).state_dict(), tmp_path / "resnet20-12fca82f.th")
    code = _block(ROOT / "docs" / "shift.md", "ck.run_shift(")
    for old, new in [
        ('"../shared/data/pretrained/resnet20-12fca82f.th"', '"resnet20-12fca82f.th"'),
        ('data_dir="../shared/data"', 'data_dir="data"'),
        ("cal_size=1000", "cal_size=60"),
        ("test_size=500", "test_size=40"),
    ]:
        assert old in code, old
        code = code.replace(old, new)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/shift.md", "exec"), namespace)
    assert namespace["result"].n_test == 40
    assert namespace["report"].document.verdict.headline.startswith("Calibration ")
    assert (tmp_path / "shift" / "report.html").exists()
    assert (tmp_path / "shift" / "config.json").exists()


def _block(document: Path, marker: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", document.read_text(encoding="utf-8"), re.S)
    code = next((b for b in blocks if marker in b), None)
    assert code is not None, f"{document.name} has no python block with {marker!r}"
    return code
