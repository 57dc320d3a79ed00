"""JSON files as calibkit writes them: NaN and infinities become ``null``, written atomically.

JSON has no NaN. Every JSON calibkit writes goes through :func:`json_ready`, so a missing
or undefined number is ``null`` and the text is standard JSON (``allow_nan=False``).

>>> json_text({"ece": 0.25, "ks": float("nan"), "ci": (0.1, float("inf"))})
'{\\n "ece": 0.25,\\n "ks": null,\\n "ci": [\\n  0.1,\\n  null\\n ]\\n}'
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from calibkit.core.errors import InputError
from calibkit.io.atomic import atomic_write_bytes


def json_ready(obj: Any) -> Any:
    """``obj`` with every non-finite float replaced by ``None`` (tuples become lists)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_ready(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_ready(v) for v in obj]
    return obj


def json_text(obj: Any) -> str:
    """``obj`` as indented JSON (one space per level), non-finite floats written as null."""
    return json.dumps(json_ready(obj), indent=1, allow_nan=False)


def write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` to ``path`` as :func:`json_text` plus a newline, atomically."""
    atomic_write_bytes(Path(path), (json_text(obj) + "\n").encode("utf-8"))


def read_json(path: Path) -> Any:
    """The JSON in ``path``; an unreadable or invalid file raises :class:`InputError`."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(str(path), "a readable JSON file written by calibkit", str(exc)) from None
