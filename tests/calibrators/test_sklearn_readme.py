"""The README's scikit-learn quick start runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def test_sklearn_quick_start_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    code = next(b for b in blocks if "CalibratedClassifier" in b)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()  # the clone's folder of the README's outputs
    namespace: dict[str, object] = {}
    exec(compile("import calibkit as ck\n" + code, "README.md", "exec"), namespace)
    assert namespace["proba"].shape == (1000, 3)  # type: ignore[attr-defined]
    assert (tmp_path / "out" / "forest.png").stat().st_size > 0
