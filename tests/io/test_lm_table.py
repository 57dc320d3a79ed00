"""Option log-probability and stated-confidence tables (calibkit.io.lm_table)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.io.lm_outputs import PAD_GAP
from calibkit.io.predictions import load_groups, load_lm, load_predictions


def test_option_csv_ragged_and_tasks(tmp_path: Path) -> None:
    path = tmp_path / "o.csv"
    path.write_text(
        "id,task,answer,logprob_0,logprob_1,logprob_2\n"
        "1,arc,2,-1.5,-2.0,-0.25\n"
        '2,"boolq, v2",0,-0.1,-2.4,\n',
        "utf-8",
    )
    out = load_predictions(path, layout="option-logprobs")
    assert out.kind == "logits"
    assert out.labels.tolist() == [2, 0]
    assert out.scores[1].tolist() == [-0.1, -2.4, -2.4 - PAD_GAP]
    assert out.probs[1, 2] == 0.0
    np.testing.assert_allclose(out.probs[1, :2].sum(), 1.0)
    groups = load_groups(path, "task", 2, layout="option-logprobs")
    assert groups.tolist() == ["arc", "boolq, v2"]


def test_option_jsonl_equals_csv(tmp_path: Path) -> None:
    (tmp_path / "o.jsonl").write_text(
        '{"task": "arc", "answer": 2, "logprobs": [-1.5, -2.0, -0.25]}\n', "utf-8"
    )
    (tmp_path / "o.csv").write_text(
        "task,answer,logprob_0,logprob_1,logprob_2\narc,2,-1.5,-2.0,-0.25\n"
    )
    a = load_predictions(tmp_path / "o.jsonl", layout="option-logprobs")
    b = load_predictions(tmp_path / "o.csv", layout="option-logprobs")
    assert a.scores.tolist() == b.scores.tolist()
    assert a.labels.tolist() == b.labels.tolist()


def test_stated_is_the_binary_path(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_text("task,confidence,correct\nmath,0.9,true\nmath,1,0\nlaw,0.25,1\n", "utf-8")
    lm = load_lm(path, "stated-confidence")
    assert lm.answers == "stated"
    assert lm.outputs.kind == "probs"
    assert lm.outputs.probs[:, 1].tolist() == [0.9, 1.0, 0.25]
    assert lm.outputs.labels.tolist() == [1, 0, 1]


@pytest.mark.parametrize(
    ("text", "where", "said"),
    [
        ("task,confidence,correct\nm,0.9,1\nm,90,1\n", "data row 2, field confidence", "0.9"),
        ("task,confidence,correct\nm,0.9,1\nm,0.5,maybe\n", "data row 2, field correct", "maybe"),
        ("task,confidence,correct\nm,0.9,1\nm,,1\n", "data row 2, field confidence", "None"),
    ],
)
def test_bad_stated_rows(tmp_path: Path, text: str, where: str, said: str) -> None:
    path = tmp_path / "s.csv"
    path.write_text(text, "utf-8")
    with pytest.raises(InputError) as err:
        load_predictions(path, layout="stated-confidence")
    assert f"s.csv, {where}" in str(err.value)
    assert said in str(err.value)


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"answer": 3, "logprobs": [-1, -2]}', "answer"),
        ('{"answer": 0, "logprobs": [-1, "x"]}', "logprobs[1]"),
        ('{"answer": 0, "logprobs": [-1]}', "logprobs"),
        ('{"answer": 0, "logprobs": [-1, -2], "task": ""}', "task"),
    ],
)
def test_bad_option_lines(tmp_path: Path, line: str, field: str) -> None:
    path = tmp_path / "o.jsonl"
    path.write_text('{"answer": 0, "logprobs": [-1, -2]}\n' + line + "\n", "utf-8")
    with pytest.raises(InputError) as err:
        load_predictions(path, layout="option-logprobs")
    assert f"o.jsonl, line 2, field {field}:" in str(err.value)


def test_layout_refusals(tmp_path: Path) -> None:
    path = tmp_path / "o.jsonl"
    path.write_text('{"answer": 0, "logprobs": [-1, -2]}\n', "utf-8")
    with pytest.raises(InputError, match=r"^layout: .*'lm-evl'"):
        load_predictions(path, layout="lm-evl")
    with pytest.raises(InputError, match=r"^kind: "):
        load_predictions(path, layout="option-logprobs", kind="probs")
    with pytest.raises(InputError, match=r"^length_norm: "):
        load_predictions(path, layout="option-logprobs", length_norm="acc_norm")
    with pytest.raises(InputError, match=r"^groups: .*'site'"):
        load_groups(path, "site", 1, layout="option-logprobs")
