"""Every shipped study config (``experiments/<paper>/configs/*.toml``) loads, and names data
and models that exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from calibkit.data import DATASETS
from calibkit.models import MODELS
from calibkit.study import load_study_config
from tests.conftest import SHIPPED_CONFIGS as CONFIGS


def test_there_are_configs() -> None:
    assert len(CONFIGS) >= 20  # the 21 of the six reproductions (an empty glob passes nothing)


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


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_config_finds_its_files_beside_the_repository(path: Path) -> None:
    """A relative ``data_dir`` or ``init`` is taken from the config's folder: it names
    ``../shared/data`` beside the repository, or a folder beside the config that the user
    fills (the ImageNet config's images and weights); never a place in between."""
    cfg = load_study_config(path)
    shared = REPO.parent / "shared" / "data"
    named = [cfg.model_data(spec).data_dir for spec in cfg.models]
    named += [spec.init for spec in cfg.models]
    for name in named:
        if name is None:
            continue
        where = Path(name)
        assert where.is_relative_to(shared) or where.is_relative_to(path.parent), where
