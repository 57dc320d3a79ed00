"""What a study's run is (``identity.json``): the settings that make two runs the same.

A folder holding a run whose stored identity differs from this study's is refused rather
than mixed: :func:`check_identity` compares them, before anything is written.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from calibkit.core.errors import InputError
from calibkit.study.artifacts import read_json
from calibkit.study.config import DataConfig, ModelSpec, StudyConfig
from calibkit.study.prepare import StudyData
from calibkit.training import TrainConfig

#: The version of the layout of a run's files.
FORMAT_VERSION = 1
#: The file of a run holding its identity.
IDENTITY_FILE = "identity.json"


def run_identity(cfg: StudyConfig, spec: ModelSpec, seed: int, data: StudyData) -> dict[str, Any]:
    """What makes two runs the same (the data folder is left out: data may move), as the
    JSON ``identity.json`` holds it."""
    data_cfg = dataclasses.asdict(cfg.model_data(spec))
    data_cfg.pop("data_dir")
    identity = {
        "format": FORMAT_VERSION,
        "data": data_cfg,
        "classes": list(data.classes),
        "n": {k: len(v[1]) for k, v in data.splits.items()},
        "model": {
            "name": spec.name,
            "params": spec.params,
            "init": None if spec.init is None else Path(spec.init).name,
            "init_rows": list(spec.init_rows),
        },
        "training": dataclasses.asdict(cfg.model_training(spec)),
        "seed": seed,
    }
    result: dict[str, Any] = json.loads(json.dumps(identity))
    return result


def _with_new_defaults(found: dict[str, Any], identity: dict[str, Any]) -> dict[str, Any]:
    """A stored identity with settings added to calibkit since then set to their defaults.

    A setting that did not exist when a run was made cannot have changed it; filling in the
    default keeps runs made by an older calibkit resumable.
    """
    for key, cls in (("data", DataConfig), ("training", TrainConfig)):
        stored, now = found.get(key), identity.get(key, {})
        if isinstance(stored, dict):
            defaults = {
                f.name: json.loads(json.dumps(f.default))
                for f in dataclasses.fields(cls)
                if f.default is not dataclasses.MISSING and f.name in now
            }
            found[key] = {**{k: v for k, v in defaults.items() if k not in stored}, **stored}
    return found


def check_identity(rdir: Path, identity: dict[str, Any]) -> None:
    """Refuse the run folder ``rdir`` if it holds a run with another identity (reads only)."""
    path = rdir / IDENTITY_FILE
    if not path.exists():
        return
    stored = read_json(path)
    found = _with_new_defaults(stored, identity) if isinstance(stored, dict) else {}
    if found != identity:
        diff = sorted(k for k in set(found) | set(identity) if found.get(k) != identity.get(k))
        raise InputError(
            "out",
            f"a folder whose run {rdir.name} of {rdir.parent.name} has this study's settings "
            "(use another --out, or delete that run)",
            "different " + ", ".join(diff),
        )
