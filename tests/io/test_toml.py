"""Tests of calibkit.io.toml: typed dataclasses from TOML, errors naming file and key, and
the round trip ``load(to_toml(cfg)) == cfg``."""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from calibkit.core.errors import InputError
from calibkit.io.toml import from_mapping, load_toml, to_toml
from calibkit.study.definition.config import StudyConfig, load_study_config
from calibkit.training import TrainConfig


@dataclass(frozen=True)
class Leaf:
    rate: float = 0.1
    count: int = 1


@dataclass(frozen=True)
class Item:
    name: str
    leaf: Leaf = Leaf()
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Checked:
    mode: str = "a"

    def __post_init__(self) -> None:
        if self.mode not in ("a", "b"):
            raise InputError("mode", "a or b", repr(self.mode))


@dataclass(frozen=True)
class Root:
    title: str
    flag: bool = False
    number: int = 0
    scale: float = 1.0
    size: int | float = 0.5
    maybe: int | None = None
    note: str | None = None
    sizes: tuple[int, ...] = ()
    rates: tuple[float, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    leaf: Leaf = Leaf()
    items: tuple[Item, ...] = ()
    checked: Checked = Checked()


def _roundtrip(cls: type, obj: Any, tmp_path: Path) -> Any:
    path = tmp_path / "cfg.toml"
    path.write_text(to_toml(obj), encoding="utf-8")
    return load_toml(cls, path)


def _write(tmp_path: Path, text: str, name: str = "cfg.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- round trip -------------------------------------------------------------------------


def test_roundtrip_nested_tuples_dicts_and_scalars(tmp_path: Path) -> None:
    cfg = Root(
        title='quote " backslash \\ tab \t newline \n unicode é ✓ 𝛼 \x01 del \x7f end',
        flag=True,
        number=-42,
        scale=1e-3,
        size=7,
        maybe=3,
        sizes=(1, 2, 3),
        rates=(0.1, 1e-3, math.inf, -math.inf, 2.5e20, -0.0),
        extra={
            "a": 1,
            "b.c": "dotted key",
            "key with space": [1, 2.5, "x"],
            "nested": {"inner": {"deep": True, "v": 0.1}, "list": [{"k": 1}, {"k": 2}]},
            "é": "unicode key",
            "del\x7fkey": "del \x7f value",
        },
        leaf=Leaf(rate=0.1, count=5),
        items=(
            Item("first", Leaf(0.25, 2), ("x", "y")),
            Item('second \\ "q"', Leaf(1e-3, 3)),
        ),
        checked=Checked("b"),
    )
    back = _roundtrip(Root, cfg, tmp_path)
    assert back == cfg
    assert isinstance(back.size, int)
    assert back.size == 7
    assert isinstance(back.scale, float)
    assert math.copysign(1.0, back.rates[-1]) == -1.0


def test_roundtrip_none_fields_are_omitted(tmp_path: Path) -> None:
    cfg = Root(title="t")
    text = to_toml(cfg)
    assert "maybe" not in text
    assert "note" not in text
    back = _roundtrip(Root, cfg, tmp_path)
    assert back == cfg
    assert back.maybe is None
    assert back.note is None


def test_roundtrip_float_keeps_float_and_int_or_float_keeps_type(tmp_path: Path) -> None:
    cfg = Root(title="t", scale=2.0, size=0.1, rates=(0.1,))
    back = _roundtrip(Root, cfg, tmp_path)
    assert back == cfg
    assert isinstance(back.size, float)
    assert tomllib.loads(to_toml(cfg))["scale"] == 2.0


def test_to_toml_is_valid_toml_with_tables_after_values() -> None:
    cfg = Root(title="t", items=(Item("a"), Item("b")), sizes=(1,))
    data = tomllib.loads(to_toml(cfg))
    assert [i["name"] for i in data["items"]] == ["a", "b"]
    assert data["items"][1]["leaf"] == {"rate": 0.1, "count": 1}
    assert data["sizes"] == [1]


def test_to_toml_rejects_non_dataclass() -> None:
    with pytest.raises(TypeError):
        to_toml({"a": 1})
    with pytest.raises(TypeError):
        to_toml(Root)


def test_roundtrip_train_config(tmp_path: Path) -> None:
    cfg = TrainConfig(
        epochs=3,
        optimizer="sgd",
        lr=0.1,
        nesterov=True,
        weight_decay=5e-4,
        schedule="step",
        milestones=(1, 2),
        lr_decay=0.2,
        augment=True,
        loss="focal",
        loss_params={"gamma": 3.0, "penalty": {"name": "mdca", "beta": 1.0}},
    )
    back = _roundtrip(TrainConfig, cfg, tmp_path)
    assert back == cfg
    assert _roundtrip(TrainConfig, TrainConfig(), tmp_path) == TrainConfig()


STUDY = """\
name = "tiny"
seeds = [0, 3]

[data]
dataset = "digits"
data_dir = "data"
calibration_size = 0.2

[training]
epochs = 3
lr = 0.01

[[models]]
name = "mlp"
label = "a"
params = { hidden = [16], dropout = 0.25 }

[[models]]
name = "mlp"
label = "b"
training = { epochs = 2 }
"""


def test_roundtrip_study_config(tmp_path: Path) -> None:
    cfg = load_study_config(_write(tmp_path, STUDY, "study.toml"))
    assert isinstance(cfg, StudyConfig)
    assert [m.label for m in cfg.models] == ["a", "b"]
    assert cfg.model_training(cfg.model("b")).epochs == 2
    assert cfg.model_training(cfg.model("a")).epochs == 3
    out = tmp_path / "out"
    out.mkdir()
    back = load_study_config(_write(out, to_toml(cfg), "study.toml"))
    assert back == cfg
    assert back.models[0].params == {"hidden": [16], "dropout": 0.25}


# --- errors -------------------------------------------------------------------------------


def test_unknown_top_level_key_names_file_and_lists_keys(tmp_path: Path) -> None:
    path = _write(tmp_path, 'title = "t"\ntitel = "x"\n')
    with pytest.raises(InputError, match=r"cfg\.toml: titel: expected a key among title, flag"):
        load_toml(Root, path)


def test_unknown_nested_key_names_dotted_key(tmp_path: Path) -> None:
    path = _write(tmp_path, 'title = "t"\n[leaf]\nrte = 1\n')
    with pytest.raises(InputError, match=r"cfg\.toml: leaf\.rte: expected a key among rate, count"):
        load_toml(Root, path)


def test_unknown_key_in_array_of_tables(tmp_path: Path) -> None:
    path = _write(tmp_path, 'title = "t"\n[[items]]\nname = "a"\n[[items]]\nnme = "b"\n')
    with pytest.raises(InputError, match=r"items\[1\]\.nme: expected a key among name, leaf"):
        load_toml(Root, path)


def test_unknown_training_key_in_train_config(tmp_path: Path) -> None:
    study = STUDY.replace("lr = 0.01", "lrr = 0.01")
    path = _write(tmp_path, study, "study.toml")
    with pytest.raises(InputError, match=r"study\.toml: training\.lrr: expected a key among") as e:
        load_study_config(path)
    assert "epochs" in str(e.value)
    assert "loss_params" in str(e.value)


@pytest.mark.parametrize(
    ("line", "key", "expected"),
    [
        ('number = "3"', "number", "an integer"),
        ("number = true", "number", "an integer"),
        ("number = 1.5", "number", "an integer"),
        ("flag = 1", "flag", "true or false"),
        ("scale = true", "scale", "a number"),
        ("size = true", "size", "a number"),
        ('size = "1"', "size", "a number"),
        ("title2 = 1", "title2", "a key among"),
        ("sizes = 3", "sizes", "an array"),
        ('sizes = [1, "2"]', r"sizes\[1\]", "an integer"),
        ("leaf = [1, 2]", "leaf", "a table"),
        ("leaf = 3", "leaf", "a table"),
        ("extra = [1]", "extra", "a table"),
        ("maybe = 1.0", "maybe", "an integer"),
        ("note = 3", "note", "a string"),
    ],
)
def test_wrong_types_name_file_and_key(tmp_path: Path, line: str, key: str, expected: str) -> None:
    path = _write(tmp_path, f'title = "t"\n{line}\n')
    with pytest.raises(InputError, match=rf"cfg\.toml: {key}: expected {expected}"):
        load_toml(Root, path)


def test_wrong_title_type(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cfg\.toml: title: expected a string, got 3 \(int\)"):
        load_toml(Root, _write(tmp_path, "title = 3\n"))


def test_int_accepted_for_float(tmp_path: Path) -> None:
    cfg = load_toml(Root, _write(tmp_path, 'title = "t"\nscale = 2\nrates = [1, 2]\n'))
    assert cfg.scale == 2.0
    assert isinstance(cfg.scale, float)
    assert cfg.rates == (1.0, 2.0)
    assert all(isinstance(r, float) for r in cfg.rates)
    leaf = from_mapping(Leaf, {"rate": 3}, "x")
    assert isinstance(leaf.rate, float)


def test_nested_wrong_type_names_dotted_key(tmp_path: Path) -> None:
    path = _write(tmp_path, 'title = "t"\n[leaf]\ncount = "many"\n')
    with pytest.raises(InputError, match=r"cfg\.toml: leaf\.count: expected an integer"):
        load_toml(Root, path)


def test_required_key_missing(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cfg\.toml: title: expected a value \(this key is req"):
        load_toml(Root, _write(tmp_path, "number = 1\n"))
    path = _write(tmp_path, 'title = "t"\n[[items]]\nleaf = {rate = 1}\n')
    with pytest.raises(InputError, match=r"cfg\.toml: items\[0\]\.name: expected a value"):
        load_toml(Root, path)


def test_post_init_error_names_file_and_dotted_key(tmp_path: Path) -> None:
    path = _write(tmp_path, 'title = "t"\n[checked]\nmode = "c"\n')
    with pytest.raises(InputError, match=r"cfg\.toml: checked\.mode: expected a or b, got 'c'"):
        load_toml(Root, path)


def test_train_config_rejection_names_file_and_dotted_key(tmp_path: Path) -> None:
    study = STUDY.replace("lr = 0.01", 'optimizer = "rmsprop"')
    path = _write(tmp_path, study, "study.toml")
    with pytest.raises(
        InputError, match=r"study\.toml: training\.optimizer: expected one of adam, sgd"
    ):
        load_study_config(path)


def test_invalid_toml_names_file(tmp_path: Path) -> None:
    path = _write(tmp_path, 'title = "unterminated\n', "broken.toml")
    with pytest.raises(InputError, match=r"broken\.toml: expected valid TOML"):
        load_toml(Root, path)


def test_invalid_utf8_names_file(tmp_path: Path) -> None:
    path = tmp_path / "bytes.toml"
    path.write_bytes(b'title = "\xff\xfe"\n')
    with pytest.raises(InputError, match=r"bytes\.toml: expected valid TOML"):
        load_toml(Root, path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"config: expected an existing TOML file, got .*nope"):
        load_toml(Root, tmp_path / "nope.toml")
    with pytest.raises(InputError, match="config: expected an existing TOML file"):
        load_toml(Root, tmp_path)  # a folder is not a file


def test_from_mapping_where_prefix() -> None:
    with pytest.raises(InputError, match=r"^here: outer\.count: expected an integer"):
        from_mapping(Leaf, {"count": "x"}, "here", prefix="outer")
    assert from_mapping(Leaf, {}, "here") == Leaf()
