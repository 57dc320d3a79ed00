"""lm-evaluation-harness samples files (calibkit.io.lm_harness), on files the harness wrote."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.io.lm_harness import read_harness, task_of
from calibkit.io.lm_outputs import PAD_GAP
from calibkit.io.predictions import load_groups, load_predictions

HARNESS = Path(__file__).parent / "fixtures" / "lm" / "harness"
SAMPLES = sorted(HARNESS.glob("samples_*.jsonl"))


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def test_the_folder_reads_every_task_as_groups() -> None:
    lm = read_harness(HARNESS)
    assert lm.task_names == [task_of(p) for p in SAMPLES]
    assert lm.n_questions == sum(len(_rows(p)) for p in SAMPLES) == 18
    assert lm.groups["group"].tolist() == ["toyqa"] * 18  # results_*.json's group_subtasks
    assert load_groups(HARNESS, "task", 18, layout="lm-eval").tolist() == lm.tasks.tolist()


def test_log_likelihoods_gold_and_padding_as_logged() -> None:
    lm = read_harness(HARNESS)
    rows = [r for p in SAMPLES for r in _rows(p)]
    width = max(len(r["filtered_resps"]) for r in rows)
    assert lm.outputs.scores.shape == (18, width)
    for i, r in enumerate(rows):
        lls = [float(x[0]) for x in r["filtered_resps"]]
        k = len(lls)
        assert lm.outputs.scores[i, :k].tolist() == lls  # exact: the logged strings
        assert lm.n_options[i] == k
        assert lm.outputs.labels[i] == int(r["target"])
        assert np.all(lm.outputs.scores[i, k:] == min(lls) - PAD_GAP)
        assert np.all(lm.outputs.probs[i, k:] == 0.0)  # a missing option: probability 0
    assert any("fewer than" in n for n in lm.notes)


@pytest.mark.parametrize("norm", ["acc_norm", "acc_bytes"])
def test_normalisation_reproduces_the_harness_metric_on_every_question(norm: str) -> None:
    lm = read_harness(HARNESS, length_norm=norm)
    rows = [r for p in SAMPLES for r in _rows(p)]
    for i, r in enumerate(rows):
        k = len(r["filtered_resps"])
        choices = r["doc"]["choices"]  # the options' texts, independent of the continuations
        lls = np.array([float(x[0]) for x in r["filtered_resps"]])
        size = [len(c) if norm == "acc_norm" else len(c.encode("utf-8")) for c in choices]
        np.testing.assert_array_equal(lm.outputs.scores[i, :k], lls / np.array(size, float))
        right = float(np.argmax(lm.outputs.scores[i, :k]) == lm.outputs.labels[i])
        assert right == r[norm]  # the harness's own per-question metric
    assert norm in lm.notes[0]
    # characters and bytes differ on these options (non-ASCII texts)
    other = read_harness(HARNESS, length_norm="acc_bytes" if norm == "acc_norm" else "acc_norm")
    assert not np.array_equal(lm.outputs.scores, other.outputs.scores)


def test_hand_computed_row(tmp_path: Path) -> None:
    row = {
        "doc_id": 0,
        "target": "café",  # the gold as the option's text
        "arguments": {
            "gen_args_0": {"arg_0": "Q", "arg_1": " tea"},
            "gen_args_1": {"arg_0": "Q", "arg_1": " café"},
        },
        "filtered_resps": [["-3.0", "False"], ["-5.0", "False"]],
        "acc": 0.0,
        "acc_norm": 0.0,
        "acc_bytes": 0.0,
    }
    path = tmp_path / "samples_drinks_2024-01-01T00-00-00.jsonl"
    path.write_text(json.dumps(row, ensure_ascii=False) + "\n", "utf-8")
    # raw: -3, -5; acc_norm: -3/3 = -1, -5/4 = -1.25; acc_bytes: -3/3 = -1, -5/5 = -1
    assert read_harness(path).outputs.scores.tolist() == [[-3.0, -5.0]]
    assert read_harness(path, "acc_norm").outputs.scores.tolist() == [[-1.0, -1.25]]
    assert read_harness(path, "acc_bytes").outputs.scores.tolist() == [[-1.0, -1.0]]
    assert read_harness(path).outputs.labels.tolist() == [1]
    assert read_harness(path).tasks.tolist() == ["drinks"]


def _broken(tmp_path: Path, line: int, edit) -> Path:
    folder = tmp_path / "run"
    shutil.copytree(HARNESS, folder)
    path = sorted(folder.glob("samples_*.jsonl"))[1]
    rows = _rows(path)
    edit(rows[line - 1])
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return folder


@pytest.mark.parametrize(
    ("edit", "field", "said"),
    [
        (lambda r: r["filtered_resps"].__setitem__(1, ["x", "False"]), "filtered_resps[1]", "'x'"),
        (
            lambda r: r["filtered_resps"].__setitem__(0, ["nan", "False"]),
            "filtered_resps[0]",
            "nan",
        ),
        (lambda r: r.pop("filtered_resps"), "filtered_resps", "no such field"),
        (lambda r: r.__setitem__("target", "9"), "target", "'9'"),
        (lambda r: r.__setitem__("target", "[0, 1]"), "target", "several"),
        (lambda r: r.__setitem__("target", "no such option"), "target", "no such option"),
        (lambda r: r["arguments"].popitem(), "arguments", "one request per response"),
        (lambda r: r.__setitem__("acc", 1.0 - r["acc"]), "acc", "from the scores read"),
        (lambda r: r.__setitem__("filter", "other"), "filter", "one filter"),
    ],
)
def test_a_malformed_line_is_named_and_nothing_is_read(tmp_path: Path, edit, field, said) -> None:
    folder = _broken(tmp_path, 4, edit)
    with pytest.raises(InputError) as err:
        load_predictions(folder, layout="lm-eval")
    name = sorted(folder.glob("samples_*.jsonl"))[1].name
    assert f"{name}, line 4, field {field}" in str(err.value)
    assert said in str(err.value) or said in err.value.expected


def test_not_json_and_two_runs_of_one_task(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    shutil.copytree(HARNESS, folder)
    path = SAMPLES[0]
    (folder / path.name).write_text(path.read_text("utf-8") + '{"doc_id": 7,\n', "utf-8")
    with pytest.raises(InputError, match=r"line 7: expected one JSON object"):
        read_harness(folder)
    (folder / path.name).write_text(path.read_text("utf-8"), "utf-8")
    shutil.copy(path, folder / path.name.replace("2026", "2027"))
    with pytest.raises(InputError, match="one samples file per task"):
        read_harness(folder)
    with pytest.raises(InputError, match="samples_"):
        read_harness(tmp_path)  # a folder without samples files


def test_wrong_delimiter_is_caught_by_the_logged_acc_norm(tmp_path: Path) -> None:
    # " ab": -2.0 and " abcd": -3.5. Without the delimiter: -2/2 = -1.0 < -3.5/4 = -0.875, so
    # the harness's acc_norm picks option 1 (the gold); with it: -2/3 > -3.5/5, option 0.
    row = {
        "doc_id": 0, "target": "1", "acc": 0.0, "acc_norm": 1.0,
        "arguments": {"gen_args_0": {"arg_0": "Q", "arg_1": " ab"},
                      "gen_args_1": {"arg_0": "Q", "arg_1": " abcd"}},
        "filtered_resps": [["-2.0", "False"], ["-3.5", "False"]],
    }  # fmt: skip
    path = tmp_path / "samples_t_2024-01-01T00-00-00.jsonl"
    path.write_text(json.dumps(row) + "\n", "utf-8")
    assert read_harness(path, "acc_norm").outputs.scores.tolist() == [[-1.0, -0.875]]
    results = {"configs": {"t": {"target_delimiter": "!"}}, "group_subtasks": {}}
    (tmp_path / "results_2024-01-01T00-00-00.json").write_text(json.dumps(results), "utf-8")
    with pytest.raises(InputError, match=r"line 1, field acc_norm: expected 0.0 from the scores"):
        read_harness(path, "acc_norm")
    assert read_harness(path).n_questions == 1  # unnormalised: the delimiter is not used
