"""The one writer of report folders, and the one printer of a report on the terminal.

A command that reports builds a :class:`Report` (its :class:`~calibkit.reporting.document.Document`
with a verdict first, its numbers, the plain-text tables for the terminal, and any extra file
such as a fitted predictor) and hands it to :func:`write_report`, which writes atomically
(the folder appears complete or not at all, :func:`calibkit.io.atomic.atomic_directory`)::

    report.md      the document in Markdown (figures linked from figures/)
    report.html    the same, self-contained (inline CSS, figures as data URIs)
    results.json   the verdict, every number (fractions), the resolved inputs (path, size,
                   sha256), the options and the versions of calibkit and its dependencies
    figures/       every figure of the document, full size
    ...            the report's own files (results.csv, a fitted predictor, config.json)

:func:`print_report` shows the same report on the terminal: the verdict first, the
statistics one line below, then the tables (``--format table``), or ``results.json``'s
content (``--format json``).

>>> import json, tempfile
>>> from calibkit.reporting.document import Document, Paragraph, Verdict
>>> doc = Document("Demo", [Paragraph("x")], Verdict("All good.", "ECE 0.5%."))
>>> report = Report("demo", doc, {"ece": 0.005}, text="ece  0.50%")
>>> folder = Path(tempfile.mkdtemp()) / "out"
>>> sorted(write_report(report, folder))
['report.html', 'report.md', 'results.json']
>>> results = json.loads((folder / "results.json").read_text())
>>> results["verdict"]["headline"], results["ece"], results["command"]
('All good.', 0.005, 'calibkit demo')
"""

from __future__ import annotations

import hashlib
import platform
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from calibkit.core.version import __version__
from calibkit.io.atomic import atomic_directory
from calibkit.io.jsonfile import json_ready, json_text
from calibkit.reporting.document import Document
from calibkit.reporting.render import to_html, to_markdown
from calibkit.reporting.text import verdict_text

#: The layout version of a report folder's ``results.json`` (2: verdict, inputs, options and
#: versions beside the numbers).
REPORT_FORMAT = 2
#: The files every report folder holds (besides ``figures/`` and the report's own files).
REPORT_FILES = ("report.md", "report.html", "results.json")
#: The packages whose versions ``results.json`` records (those installed).
VERSIONED = ("numpy", "scipy", "scikit-learn", "torch", "matplotlib")
#: Inputs at most this large get a sha256 in ``results.json`` (larger: size only).
HASHED_BYTES = 2 << 30


@dataclass(frozen=True)
class Report:
    """What one command reports.

    Attributes
    ----------
    command : str
        The command (``"evaluate"``); ``results.json`` says ``"calibkit evaluate"``.
    document : Document
        The report, its verdict first.
    results : mapping
        Every number, as fractions (non-finite floats become ``null``).
    text : str
        The plain-text tables the terminal shows below the verdict.
    inputs : mapping of str to str
        Each input file by the option that named it (``{"FILE": "preds.npz"}``).
    options : mapping
        The resolved options (defaults filled in).
    files : mapping of str to str or bytes
        The report's own files besides the three (``results.csv``, a fitted predictor).

    Examples
    --------
    >>> from calibkit import Document, Paragraph, Verdict
    >>> doc = Document("Demo", [Paragraph("TS wins.")], verdict=Verdict("Use ts.", "ECE 1.0%"))
    >>> report = Report("evaluate", doc, {"ece": 0.01}, text="ECE 1.00%")
    >>> print_report(report)  # the verdict first, then the tables
    Use ts.
      ECE 1.0%
    <BLANKLINE>
    ECE 1.00%
    """

    command: str
    document: Document
    results: Mapping[str, Any]
    text: str = ""
    inputs: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    files: Mapping[str, str | bytes] = field(default_factory=dict)


def versions() -> dict[str, str]:
    """calibkit's version, Python's, the platform's and those of :data:`VERSIONED`."""
    found = {"calibkit": __version__, "python": platform.python_version()}
    for name in VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found | {"platform": platform.platform()}


def describe_input(path: str) -> dict[str, Any]:
    """An input file as ``results.json`` records it: absolute path, size, sha256."""
    p = Path(path).resolve()
    about: dict[str, Any] = {"path": str(p)}
    if p.is_file():
        about["bytes"] = p.stat().st_size
        if about["bytes"] <= HASHED_BYTES:
            digest = hashlib.sha256()
            with p.open("rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    digest.update(chunk)
            about["sha256"] = digest.hexdigest()
    return about


def results_document(report: Report) -> dict[str, Any]:
    """The content of ``results.json``: header, verdict, inputs, options, then the numbers."""
    verdict = report.document.verdict
    head: dict[str, Any] = {
        "calibkit_report": REPORT_FORMAT,
        "calibkit_version": __version__,
        "command": f"calibkit {report.command}",
        "title": report.document.title,
        "verdict": None
        if verdict is None
        else {"headline": verdict.headline, "detail": verdict.detail},
        "inputs": {k: describe_input(v) for k, v in report.inputs.items()},
        "options": dict(report.options),
        "versions": versions(),
    }
    clash = sorted(set(head) & set(report.results))
    if clash:
        raise ValueError(f"results keys {clash} clash with results.json's header")
    return json_ready(head | dict(report.results))  # type: ignore[no-any-return]


def write_report(
    report: Report,
    folder: Path,
    *,
    results: Mapping[str, Any] | None = None,
) -> list[str]:
    """Write the report folder ``folder`` atomically; returns the files written (relative).

    An existing ``folder`` is replaced only if calibkit wrote everything in it and nobody
    changed it since (its manifest keeps each file's sha256), and it holds no symbolic link (see
    :mod:`calibkit.io.atomic`). ``results``: :func:`results_document` of ``report`` when
    the caller already has it (each input is hashed once per command).

    Examples
    --------
    >>> import tempfile
    >>> from calibkit import Document, Verdict
    >>> report = Report("evaluate", Document("Demo", [], verdict=Verdict("Use ts.")), {})
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     sorted(write_report(report, Path(folder) / "report"))
    ['report.html', 'report.md', 'results.json']
    """
    doc = report.document
    files: dict[str, str | bytes] = {
        "report.md": to_markdown(doc),
        "report.html": to_html(doc),
        "results.json": json_text(results or results_document(report)) + "\n",
    }
    for name, data in report.files.items():
        if name in files or name.startswith("figures/"):
            raise ValueError(f"a report's own file may not be named {name!r}")
        files[name] = data
    files |= {f"figures/{fig.name}": fig.png for fig in doc.figures()}
    with atomic_directory(Path(folder)) as tmp:
        for name, data in files.items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(data, bytes):
                path.write_bytes(data)
            else:
                path.write_text(data, encoding="utf-8")
    return list(files)


def report_text(report: Report) -> str:
    """The report for the terminal: the verdict, then its tables."""
    verdict = report.document.verdict
    parts = [verdict_text(verdict)] if verdict is not None else []
    if report.text:
        parts.append(report.text)
    return "\n\n".join(parts)


def print_report(
    report: Report,
    fmt: str = "table",
    folder: Path | None = None,
    results: Mapping[str, Any] | None = None,
) -> None:
    """Print the report on stdout: :func:`report_text` (``fmt="table"``) and where the
    folder was written, or ``results.json``'s content (``fmt="json"``; ``results``, as in
    :func:`write_report`).

    Examples
    --------
    >>> from calibkit import Document, Verdict
    >>> report = Report("evaluate", Document("Demo", [], verdict=Verdict("Use ts.")), {"ece": 0.01})
    >>> print_report(report, "json")  # doctest: +ELLIPSIS
    {
     ...
     "command": "calibkit evaluate",
     ...
     "ece": 0.01
    }
    """
    if fmt == "json":
        print(json_text(results or results_document(report)))
        return
    print(report_text(report))
    if folder is not None:
        print(f"report: {folder / 'report.html'}")
    sys.stdout.flush()


__all__ = [
    "REPORT_FILES",
    "REPORT_FORMAT",
    "Report",
    "describe_input",
    "print_report",
    "report_text",
    "results_document",
    "versions",
    "write_report",
]
