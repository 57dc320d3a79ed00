"""Chat responses with top_logprobs (calibkit.io.lm_chat)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.io.predictions import load_groups, load_predictions


def _completion(top: list[tuple[str, float]], first: str = "B") -> dict:
    entries = [{"token": t, "logprob": lp, "bytes": None} for t, lp in top]
    content = [{"token": first, "logprob": top[0][1], "top_logprobs": entries}]
    return {"id": "x", "choices": [{"index": 0, "message": {"content": first},
                                    "logprobs": {"content": content}}]}  # fmt: skip


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def test_letters_summed_missing_ones_get_the_remaining_mass(tmp_path: Path) -> None:
    top = [("B", math.log(0.6)), (" B", math.log(0.1)), ("A", math.log(0.2)), ("C", math.log(0.05))]
    batch = {"custom_id": "q1", "response": {"status_code": 200, "body": _completion(top)}}
    rows = [
        {"task": "anatomy", "answer": "B", "response": _completion(top)},
        {"task": "law", "answer": "A", **batch},  # a Batch API output line
    ]
    path = _write(tmp_path / "answers.jsonl", rows)
    out = load_predictions(path, layout="chat-logprobs")
    # B = 0.6 + 0.1, A = 0.2, C = 0.05; D missing: min(1 - 0.95, 0.05) = 0.05; renormalised
    want = np.array([0.2, 0.7, 0.05, 0.05]) / 1.0
    np.testing.assert_allclose(out.probs[0], want, rtol=1e-12)
    assert out.labels.tolist() == [1, 0]
    assert load_groups(path, "task", 2, layout="chat-logprobs").tolist() == ["anatomy", "law"]


def test_remaining_mass_never_above_the_least_listed_token(tmp_path: Path) -> None:
    top = [("A", math.log(0.5)), ("B", math.log(0.1))]  # 0.4 unlisted, C and D missing
    path = _write(tmp_path / "a.jsonl", [{"answer": "A", "response": _completion(top, "A")}])
    probs = load_predictions(path, layout="chat-logprobs").probs[0]
    # each missing option: min(0.4 / 2, 0.1) = 0.1
    np.testing.assert_allclose(probs, np.array([0.5, 0.1, 0.1, 0.1]) / 0.8, rtol=1e-12)


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({"answer": "E"}, "answer"),
        ({"answer": "A", "response": {"choices": []}}, "response.choices"),
        ({"answer": "A", "response": {"choices": [{"logprobs": None}]}}, "logprobs.content"),
        ({"answer": "A", "response": {"status_code": 500, "body": {}}}, "status_code"),
        ({"answer": "A", "task": 3}, "task"),
    ],
)
def test_bad_lines_are_named(tmp_path: Path, row: dict, field: str) -> None:
    good = {"answer": "A", "response": _completion([("A", -0.1)], "A")}
    path = _write(tmp_path / "a.jsonl", [good, {**good, **row}])
    with pytest.raises(InputError) as err:
        load_predictions(path, layout="chat-logprobs")
    assert "a.jsonl, line 2, field" in str(err.value)
    assert field in err.value.argument
