"""The shipped Wang et al. configs are what ``wang2021_configs.py`` writes, where it writes."""

from __future__ import annotations

import pytest

from experiments.wang2021 import wang2021_configs as generator


@pytest.mark.parametrize("key", list(generator.DATASETS))
def test_the_shipped_config_is_the_generated_one(key: str) -> None:
    shipped = generator.CONFIGS / f"wang2021_{key}.toml"
    assert shipped.read_text(encoding="utf-8") == generator.config(key)


@pytest.mark.parametrize("key", list(generator.FULLSCALE))
def test_the_shipped_full_scale_config_is_the_generated_one(key: str) -> None:
    shipped = generator.FULLSCALE_CONFIGS / f"wang2021_resnet32_{key}.toml"
    assert shipped.read_text(encoding="utf-8") == generator.fullscale_config(key)
