"""Every study config shipped in configs/ loads, and names data and models that exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from calibkit.data import DATASETS
from calibkit.models import MODELS
from calibkit.study import load_study_config

ROOT = Path(__file__).resolve().parents[2] / "configs"
CONFIGS = sorted([*ROOT.glob("*.toml"), *ROOT.glob("fullscale/*.toml")])


def test_there_are_configs() -> None:
    assert len(CONFIGS) >= 5


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_config_loads(path: Path) -> None:
    cfg = load_study_config(path)
    assert cfg.models
    assert cfg.seeds
    for spec in cfg.models:
        assert spec.name in MODELS
        dataset = cfg.model_data(spec).dataset.split(":")[0]
        assert dataset in DATASETS
        if spec.init is not None:  # relative paths resolved from the config's folder
            assert Path(spec.init).is_absolute()
