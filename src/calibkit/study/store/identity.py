"""What a study's run is (``identity.json``): the settings that make two runs the same.

A folder holding a run whose stored identity differs from this study's is refused rather
than mixed: :func:`check_identity` compares them, before anything is written.

A model started from a checkpoint (``init``) is identified by the checkpoint's file name and
the SHA-256 of its tensors (:func:`init_digest`): a checkpoint replaced under the same name
makes another run.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import torch

from calibkit.core.errors import InputError
from calibkit.models import read_state_dict
from calibkit.study.definition.config import DataConfig, ModelSpec, StudyConfig
from calibkit.study.definition.prepare import StudyData
from calibkit.study.store.run_folder import FORMAT_VERSION, RunFolder
from calibkit.training import TrainConfig


def init_digest(path: str | os.PathLike[str]) -> str:
    """The SHA-256 (hex) of checkpoint ``path``'s tensors: each name, dtype, shape and bytes,
    in the order of the names (so the same weights saved in another format or order hash
    the same). Computed once per file version (path, inode, size, modification and change
    times).

    >>> import tempfile, torch
    >>> from safetensors.torch import save_file
    >>> with tempfile.TemporaryDirectory() as d:
    ...     save_file({"b": torch.zeros(2), "a": torch.ones(1)}, f"{d}/x.safetensors")
    ...     torch.save({"a": torch.ones(1), "b": torch.zeros(2)}, f"{d}/x.pt")
    ...     init_digest(f"{d}/x.safetensors") == init_digest(f"{d}/x.pt")
    True
    """
    p = Path(path).resolve()
    st = p.stat() if p.is_file() else None
    version = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) if st else None
    return _digest(str(p), version)


@functools.lru_cache(maxsize=32)
def _digest(path: str, version: tuple[int, ...] | None) -> str:
    digest = hashlib.sha256()
    for name, tensor in sorted(read_state_dict(path).items()):
        flat = tensor.detach().cpu().contiguous().reshape(-1)
        head = f"{name}\0{flat.dtype}\0{tuple(tensor.shape)}\0".encode()
        digest.update(len(head).to_bytes(8, "little") + head)
        digest.update(flat.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


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
            "init_sha256": None if spec.init is None else init_digest(spec.init),
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
    stored = RunFolder(rdir).identity()
    if stored is None:
        return
    found = _with_new_defaults(stored, identity) if isinstance(stored, dict) else {}
    if found != identity:
        diff = sorted(k for k in set(found) | set(identity) if found.get(k) != identity.get(k))
        got = "different " + ", ".join(diff)
        was, now = (d.get("model") or {} for d in (found, identity))
        if was.get("init_sha256") != now.get("init_sha256") and was.get("init") is not None:
            got += (
                f" (its init checkpoint {now.get('init')} holds other tensors than the "
                f"{was.get('init')} it started from: sha256 {str(was.get('init_sha256'))[:12]} "
                f"then, {str(now.get('init_sha256'))[:12]} now)"
            )
        raise InputError(
            "out",
            f"a folder whose run {rdir.name} of {rdir.parent.name} has this study's settings "
            "(use another --out, or delete that run)",
            got,
        )
