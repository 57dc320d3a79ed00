from __future__ import annotations

from pathlib import Path

import pytest

from calibkit.core.errors import InputError, UnknownNameError
from calibkit.io.toml import to_toml
from calibkit.study.definition.config import DEFAULT_CONFIG, StudyConfig, load_study_config
from tests.study.conftest import TINY


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.toml"
    p.write_text(text, encoding="utf-8")
    return p


def test_tiny_config_loads(tiny_config: Path) -> None:
    cfg = load_study_config(tiny_config)
    assert [m.label for m in cfg.models] == ["mlp", "mlp_dropout"]
    assert cfg.seeds == (0, 1)
    assert cfg.model_training(cfg.models[0]).epochs == 3


def test_resolved_config_round_trips(tiny_config: Path, tmp_path: Path) -> None:
    cfg = load_study_config(tiny_config)
    again = _write(tmp_path, to_toml(cfg))
    assert load_study_config(again) == cfg


def test_default_config_is_packaged_and_valid() -> None:
    cfg = load_study_config(DEFAULT_CONFIG)
    assert cfg.data.dataset == "digits"
    assert len(cfg.models) >= 2
    assert len(cfg.seeds) >= 2


def test_model_training_overrides(tmp_path: Path) -> None:
    text = TINY.replace(
        "params = { hidden = [16] }", 'training = { epochs = 7, optimizer = "sgd" }', 1
    )
    cfg = load_study_config(_write(tmp_path, text))
    first, second = (cfg.model_training(m) for m in cfg.models)
    assert (first.epochs, first.optimizer, first.lr) == (7, "sgd", 0.01)
    assert (second.epochs, second.optimizer) == (3, "adam")


def test_relative_data_dir_is_taken_from_the_file(tmp_path: Path) -> None:
    text = TINY.replace("calibration_size = 120", 'calibration_size = 120\ndata_dir = "data"')
    cfg = load_study_config(_write(tmp_path, text))
    assert cfg.data.data_dir == str((tmp_path / "data").resolve())


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        ("lr = 0.01", "lrr = 0.01", r"training\.lrr.*among epochs"),
        ("lr = 0.01", 'lr = "fast"', r"training\.lr: expected a number"),
        ("epochs = 3", "epochs = 2.5", r"training\.epochs: expected an integer"),
        (
            'name = "mlp"\nparams',
            'name = "mlpp"\nparams',
            r"models\[0\]\.name: expected one of \d+ names, got 'mlpp' \(did you mean 'mlp'\?\)",
        ),
        (
            '["temperature", "histogram"]',
            '["temprature"]',
            r"calibrators: expected one of .*temperature",
        ),
        ('"digits:0,1,2"', '"digitz"', r"dataset: expected one of .*digits"),
        ("seeds = [0, 1]", "seeds = [0, 0]", r"seeds: expected a non-empty list of distinct"),
        ('label = "mlp_dropout"', 'label = "mlp"', r"models: expected distinct labels"),
        ("calibration_size = 120", "calibration_size = 1.5", r"data\.calibration_size"),
        ("epochs = 3", "epochs = 3\nschedule = 'warp'", r"training\.schedule: expected one of"),
        ("lr = 0.01", 'lr = 0.01\nloss = "focall"', r"loss: expected one of .*focal"),
    ],
)
def test_bad_configs_name_the_key(tmp_path: Path, old: str, new: str, match: str) -> None:
    assert old in TINY
    with pytest.raises(InputError, match=match) as info:
        load_study_config(_write(tmp_path, TINY.replace(old, new, 1)))
    assert "c.toml" in str(info.value) or isinstance(info.value, UnknownNameError)


def test_bad_override_names_the_model(tmp_path: Path) -> None:
    text = TINY.replace("params = { hidden = [16] }", "training = { epochz = 2 }", 1)
    with pytest.raises(InputError, match=r"models\[0\]\.training: epochz"):
        load_study_config(_write(tmp_path, text))


def test_select_narrows_and_overrides(tiny_config: Path) -> None:
    cfg = load_study_config(tiny_config).select(
        models=["mlp_dropout"], seeds=[1], epochs=1, data_dir="/x"
    )
    assert [m.label for m in cfg.models] == ["mlp_dropout"]
    assert cfg.seeds == (1,)
    assert cfg.model_training(cfg.models[0]).epochs == 1
    assert cfg.data.data_dir == "/x"
    with pytest.raises(InputError, match="model: expected one of mlp, mlp_dropout"):
        load_study_config(tiny_config).select(models=["resnet"])


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="valid TOML"):
        load_study_config(_write(tmp_path, "name = \n"))
    with pytest.raises(InputError, match="config: expected an existing TOML file"):
        load_study_config(tmp_path / "nope.toml")
    assert StudyConfig.__dataclass_params__.frozen  # type: ignore[attr-defined]
