"""The files a compare report held before report folders had a manifest (no numpy, no
torch: the CLI checks ``--out`` with it before any heavy import).

>>> written_before_manifests("figures/reliability.png"), written_before_manifests("a.txt")
(True, False)
"""

from __future__ import annotations


def written_before_manifests(name: str) -> bool:
    """Whether ``name`` (a path inside a report folder) is one a compare report has always
    held: such a folder written by an older calibkit, without a manifest, may be replaced."""
    top = ("report.md", "report.html", "results.json", "results.csv")
    return name in top or (name.startswith("figures/") and name.endswith(".png"))
