"""Reading and writing prediction files (calibkit.io.predictions)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from calibkit.core.errors import InputError
from calibkit.io.predictions import (
    load_groups,
    load_predictions,
    load_unlabelled_csv,
    save_predictions,
)

LABELS = np.array([0, 1, 2, 1, 0])
LOGITS = np.array(
    [[2.0, 0.1, -1.0], [0.0, 1.5, 0.2], [-0.3, 0.0, 0.9], [0.2, 0.8, 0.1], [1.1, 0.3, 0.3]]
)
PROBS = np.exp(LOGITS) / np.exp(LOGITS).sum(axis=1, keepdims=True)


def _npz(tmp_path: Path, name: str = "p.npz", **arrays: object) -> Path:
    path = tmp_path / name
    np.savez(path, **arrays)  # type: ignore[arg-type]
    return path


def _csv(tmp_path: Path, text: str, name: str = "p.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _truncate(path: Path) -> Path:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


# ----- good files ------------------------------------------------------------------------
def test_npz_logits_and_probs(tmp_path: Path) -> None:
    out = load_predictions(_npz(tmp_path, logits=LOGITS, labels=LABELS))
    assert out.kind == "logits"
    np.testing.assert_array_equal(out.scores, LOGITS)
    np.testing.assert_array_equal(out.labels, LABELS)
    out = load_predictions(_npz(tmp_path, "q.npz", probs=PROBS, labels=LABELS))
    assert out.kind == "probs"


def test_npz_with_both_prefers_logits_unless_kind_given(tmp_path: Path) -> None:
    path = _npz(tmp_path, logits=LOGITS, probs=PROBS, labels=LABELS)
    assert load_predictions(path).kind == "logits"
    assert load_predictions(path, kind="probs").kind == "probs"


def test_npz_key_overrides(tmp_path: Path) -> None:
    path = _npz(tmp_path, z=LOGITS, y=LABELS)
    out = load_predictions(path, logits_key="z", labels_key="y")
    assert out.kind == "logits"
    out = load_predictions(
        _npz(tmp_path, "q.npz", p=PROBS, y=LABELS), probs_key="p", labels_key="y"
    )
    assert out.kind == "probs"
    with pytest.raises(InputError, match="at most one"):
        load_predictions(path, logits_key="z", probs_key="z")
    with pytest.raises(InputError, match="kind"):
        load_predictions(path, logits_key="z", labels_key="y", kind="probs")


def test_npy_pair(tmp_path: Path) -> None:
    np.save(tmp_path / "s.npy", LOGITS)
    np.save(tmp_path / "y.npy", LABELS)
    out = load_predictions(tmp_path / "s.npy", kind="logits", labels_path=tmp_path / "y.npy")
    assert out.kind == "logits"
    assert out.n_samples == 5
    with pytest.raises(InputError, match=r"^kind: expected 'logits' or 'probs'.*s\.npy.*got none"):
        load_predictions(tmp_path / "s.npy", labels_path=tmp_path / "y.npy")
    with pytest.raises(InputError, match=r"^labels_path: expected a labels file beside"):
        load_predictions(tmp_path / "s.npy", kind="logits")


def test_probabilities_read_as_logits_are_refused_naming_kind(tmp_path: Path) -> None:
    """Issue #46, item 9: probabilities given as logits were read silently (a .npy) or
    refused without saying that the other kind is there (an .npz)."""
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
    np.save(tmp_path / "p.npy", probs)
    np.save(tmp_path / "y.npy", np.array([0, 1, 2]))
    with pytest.raises(InputError, match=r"^kind: expected 'probs' \(p\.npy's rows are prob"):
        load_predictions(tmp_path / "p.npy", kind="logits", labels_path=tmp_path / "y.npy")
    assert load_predictions(tmp_path / "p.npy", kind="probs", labels_path=tmp_path / "y.npy")
    path = _npz(tmp_path, probs=probs, labels=np.array([0, 1, 2]))
    with pytest.raises(InputError, match=r"^kind: expected 'probs' \(.* holds a 'probs' array"):
        load_predictions(path, kind="logits")


def test_labels_path_only_with_npy(tmp_path: Path) -> None:
    np.save(tmp_path / "y.npy", LABELS)
    path = _npz(tmp_path, logits=LOGITS, labels=LABELS)
    with pytest.raises(InputError, match="labels file"):
        load_predictions(path, labels_path=tmp_path / "y.npy")


def test_csv_any_column_order(tmp_path: Path) -> None:
    rows = "\n".join(f"{p[2]},{y},{p[0]},{p[1]}" for p, y in zip(PROBS, LABELS, strict=True))
    out = load_predictions(_csv(tmp_path, "prob_2,label,prob_0,prob_1\n" + rows + "\n"))
    assert out.kind == "probs"
    np.testing.assert_allclose(out.scores, PROBS)
    np.testing.assert_array_equal(out.labels, LABELS)


def test_csv_logits_crlf_and_float_labels(tmp_path: Path) -> None:
    text = "label,logit_0,logit_1\r\n1.0,0.5,2\r\n0,3,-1\r\n"
    out = load_predictions(_csv(tmp_path, text))
    assert out.kind == "logits"
    assert out.labels.tolist() == [1, 0]


def test_pt_dict_of_tensors(tmp_path: Path) -> None:
    path = tmp_path / "p.pt"
    torch.save(
        {"logits": torch.tensor(LOGITS, dtype=torch.bfloat16), "labels": torch.tensor(LABELS)}, path
    )
    out = load_predictions(path)
    assert out.kind == "logits"
    assert out.n_classes == 3


def test_save_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "out.npz"
    save_predictions(path, LABELS, probs=PROBS.astype(np.float32), logits=LOGITS)
    with np.load(path) as npz:
        assert sorted(npz.files) == ["labels", "logits", "probs"]
        assert npz["probs"].dtype == np.float64
    out = load_predictions(path, kind="probs")
    np.testing.assert_allclose(out.scores, PROBS, rtol=1e-6)
    save_predictions(tmp_path / "again.npz", out)
    assert load_predictions(tmp_path / "again.npz").kind == "probs"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_save_rejects_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"\.npz"):
        save_predictions(tmp_path / "x.npy", LABELS, probs=PROBS)
    with pytest.raises(InputError, match="same shape"):
        save_predictions(tmp_path / "x.npz", LABELS, probs=PROBS, logits=LOGITS[:, :2])
    with pytest.raises(InputError, match="neither"):
        save_predictions(tmp_path / "x.npz", LABELS)
    with pytest.raises(InputError, match="labels"):
        save_predictions(tmp_path / "x.npz", LABELS[:3], probs=PROBS)
    with pytest.raises(InputError, match="existing folder"):
        save_predictions(tmp_path / "nope" / "x.npz", LABELS, probs=PROBS)
    assert list(tmp_path.iterdir()) == []


# ----- bad files -------------------------------------------------------------------------
def test_unknown_extension_lists_supported(tmp_path: Path) -> None:
    path = tmp_path / "p.txt"
    path.write_text("hi")
    with pytest.raises(InputError, match=r"\.npz, \.npy, \.csv, \.pt"):
        load_predictions(path)


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        load_predictions(tmp_path / "absent.npz")
    (tmp_path / "d.npz").mkdir()
    with pytest.raises(InputError, match="regular file"):
        load_predictions(tmp_path / "d.npz")


def test_missing_key_lists_keys_present(tmp_path: Path) -> None:
    path = _npz(tmp_path, scores=LOGITS, y=LABELS)
    with pytest.raises(InputError, match="got keys scores, y"):
        load_predictions(path)
    with pytest.raises(InputError, match="'labels' array, got keys scores, y"):
        load_predictions(path, logits_key="scores")


@pytest.mark.parametrize(
    ("scores", "labels", "match"),
    [
        (np.where(np.eye(5, 3) > 0, np.nan, PROBS), LABELS, "finite"),
        (np.where(np.eye(5, 3) > 0, np.inf, PROBS), LABELS, "finite"),
        (PROBS[None], LABELS, "2-D"),
        (PROBS, LABELS[:4], r"one label per row .*\(5\)"),
        (PROBS, LABELS + 1, r"\[0, 3\)"),
        (PROBS, LABELS - 1, "label of -1"),
        (PROBS, LABELS + 0.5, "non-integer"),
        (PROBS[:, :1] / PROBS[:, :1], np.zeros(5, int), "at least 2 classes"),
        (np.zeros((0, 3)), np.zeros(0, int), "at least one sample"),
        (PROBS - 0.2, LABELS, "non-negative"),
        (PROBS * 0.9, LABELS, "summing to 1"),
    ],
)
def test_bad_arrays_name_the_file_and_key(
    tmp_path: Path, scores: np.ndarray, labels: np.ndarray, match: str
) -> None:
    path = _npz(tmp_path, probs=scores, labels=labels)
    with pytest.raises(InputError, match=match) as info:
        load_predictions(path)
    assert str(path) in str(info.value)


def test_truncated_files(tmp_path: Path) -> None:
    npz = _truncate(_npz(tmp_path, probs=PROBS, labels=LABELS))
    with pytest.raises(InputError, match="truncated or corrupt"):
        load_predictions(npz)
    np.save(tmp_path / "s.npy", PROBS)
    np.save(tmp_path / "y.npy", LABELS)
    _truncate(tmp_path / "s.npy")
    with pytest.raises(InputError, match=r"s\.npy: .*truncated or corrupt"):
        load_predictions(tmp_path / "s.npy", kind="probs", labels_path=tmp_path / "y.npy")
    pt = tmp_path / "p.pt"
    torch.save({"probs": torch.tensor(PROBS), "labels": torch.tensor(LABELS)}, pt)
    with pytest.raises(InputError, match="truncated or corrupt"):
        load_predictions(_truncate(pt))


def test_corrupt_content(tmp_path: Path) -> None:
    for name in ("p.npz", "p.npy"):
        (tmp_path / name).write_bytes(b"definitely not an array")
    with pytest.raises(InputError, match="unrecognised content"):
        load_predictions(tmp_path / "p.npz")
    with pytest.raises(InputError, match="unrecognised content"):
        load_predictions(tmp_path / "p.npy", kind="probs", labels_path=tmp_path / "p.npy")
    (tmp_path / "e.npz").write_bytes(b"")
    with pytest.raises(InputError, match="empty file"):
        load_predictions(tmp_path / "e.npz")
    np.save(tmp_path / "one.npy", PROBS)
    (tmp_path / "one.npy").rename(tmp_path / "one.npz")
    with pytest.raises(InputError, match=r"single \.npy array"):
        load_predictions(tmp_path / "one.npz")


class _Boom:
    """An object whose unpickling would run code."""

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (print, ("executed!",))


def test_pickles_are_refused_never_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("p.npz", "p.npy"):
        with (tmp_path / name).open("wb") as f:
            pickle.dump({"probs": _Boom()}, f)
    with pytest.raises(InputError, match="a pickle where arrays were expected"):
        load_predictions(tmp_path / "p.npz")
    with pytest.raises(InputError, match="a pickle where arrays were expected"):
        load_predictions(tmp_path / "p.npy", kind="probs", labels_path=tmp_path / "p.npy")
    obj = np.array([{"a": 1}, None], dtype=object)
    np.savez(tmp_path / "o.npz", probs=obj, labels=LABELS)
    with pytest.raises(InputError, match="a pickle where arrays were expected"):
        load_predictions(tmp_path / "o.npz")
    torch.save({"probs": _Boom(), "labels": torch.tensor(LABELS)}, tmp_path / "p.pt")
    with pytest.raises(InputError, match="refused, not executed"):
        load_predictions(tmp_path / "p.pt")
    assert "executed!" not in capsys.readouterr().out


def test_pt_not_a_dict_of_tensors(tmp_path: Path) -> None:
    torch.save(torch.tensor(PROBS), tmp_path / "t.pt")
    with pytest.raises(InputError, match="a dict of tensors"):
        load_predictions(tmp_path / "t.pt")
    torch.save({"probs": torch.tensor(PROBS), "labels": [0, 1]}, tmp_path / "l.pt")
    with pytest.raises(InputError, match=r"other values at \['labels'\]"):
        load_predictions(tmp_path / "l.pt")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("prob_0,prob_1\n0.5,0.5\n", "one 'label' column"),
        ("label,prob_0,prob_2\n0,0.5,0.5\n", r"prob_0 \.\. prob_1"),
        ("label,prob_0,logit_1\n0,0.5,0.5\n", "one kind of score column"),
        ("label,prob_0,prob_1,id\n0,0.5,0.5,7\n", "a column named 'id'"),
        ("label,prob_0,prob_1\n", "at least one data row"),
        ("label,prob_0,prob_1\n0,0.5,abc\n", "in data row 1"),
        ("label,prob_0,prob_1\n0,0.5,0.5\n1,0.5\n", "number of columns"),
        ("label,prob_0,prob_1\n0,0.5,nan\n", "finite"),
        ("label,prob_0,prob_1\n2,0.5,0.5\n", "label column of"),
    ],
)
def test_bad_csv(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(InputError, match=match):
        load_predictions(_csv(tmp_path, text))


def test_csv_kind_must_match_columns(tmp_path: Path) -> None:
    path = _csv(tmp_path, "label,prob_0,prob_1\n0,0.5,0.5\n")
    with pytest.raises(InputError, match="kind"):
        load_predictions(path, kind="logits")


def test_binary_csv_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "b.csv").write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(InputError, match="UTF-8"):
        load_predictions(tmp_path / "b.csv")


# ----- standard CSV quoting (issue #32) -----------------------------------------------------
TWO = np.array([[0.9, 0.1], [0.2, 0.8], [0.3, 0.7], [0.6, 0.4]])


def test_csv_quoted_group_column_read_whole_wherever_it_stands(tmp_path: Path) -> None:
    # as pandas writes it: a cell holding a comma is quoted; placed first, a split at every
    # comma would also shift the labels and scores
    rows = [
        f'"{city}",{y},{p[0]!r},{p[1]!r}'
        for city, y, p in zip(
            ["Paris, FR", "Paris, TX"] * 2, [0, 1, 1, 0], TWO.tolist(), strict=True
        )
    ]
    path = _csv(tmp_path, "city,label,prob_0,prob_1\n" + "\n".join(rows) + "\n")
    with pytest.raises(InputError, match="a column named 'city'"):  # not asked for: refused
        load_predictions(path)
    out = load_predictions(path, extra_columns=("city",))
    np.testing.assert_array_equal(out.labels, [0, 1, 1, 0])
    np.testing.assert_array_equal(out.scores, TWO)  # repr round-trips exactly
    assert load_groups(path, "city", 4).tolist() == ["Paris, FR", "Paris, TX"] * 2


def test_csv_extra_column_missing_or_a_score_column(tmp_path: Path) -> None:
    path = _csv(tmp_path, "label,prob_0,prob_1,site\n0,0.5,0.5,a\n")
    with pytest.raises(InputError) as info:
        load_predictions(path, extra_columns=("region",))
    assert str(info.value) == (
        "extra_columns: expected a column of p.csv (its columns: label, prob_0 .. prob_1, "
        "site), got 'region'"
    )
    with pytest.raises(InputError, match="extra_columns: expected a column other than"):
        load_predictions(path, extra_columns=("label",))
    with pytest.raises(InputError, match=r"groups: expected a column of p\.csv .*'region'"):
        load_groups(path, "region", 1)


@pytest.mark.parametrize("labelled", [True, False])
def test_csv_score_column_numbered_with_a_non_ascii_digit_is_refused(
    tmp_path: Path, labelled: bool
) -> None:
    # '³'.isdigit() holds but int('³') raises: a ValueError traceback before issue 32
    path = tmp_path / "p.csv"
    header = ("label," if labelled else "") + "prob_0,prob_\u00b3"
    path.write_text(header + "\n" + ("0," if labelled else "") + "0.5,0.5\n")
    load = load_predictions if labelled else load_unlabelled_csv
    with pytest.raises(InputError, match="prob_\u00b3"):
        load(path)


@pytest.mark.parametrize(
    ("value", "got"),
    [
        (None, "None"),
        ("", "'' (an empty string)"),
        (b"p.npz", "bytes (5 of them)"),
        ({"labels": [0]}, "a dict"),
    ],
)
def test_no_path_is_one_input_error(value: object, got: str, tmp_path: Path) -> None:
    """Issue 42 (as ck.load): None, bytes, a dict or '' gave pathlib's TypeError."""
    expected = f"path: expected a file path (str or os.PathLike), got {got}"
    with pytest.raises(InputError) as info:
        load_predictions(value)  # type: ignore[arg-type]
    assert str(info.value) == expected
    with pytest.raises(InputError) as info:
        save_predictions(value, [0, 1], probs=PROBS)  # type: ignore[arg-type]
    assert str(info.value) == expected
    scores = tmp_path / "s.npy"
    np.save(scores, np.array(PROBS))
    with pytest.raises(InputError) as info:
        load_predictions(scores, kind="probs", labels_path=value or {})  # type: ignore[arg-type]
    assert str(info.value).startswith("labels_path: expected a file path")
