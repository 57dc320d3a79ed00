"""Every driver script keeps calibkit's rules for bad input (``experiments/_driver.py``): a
missing input, no argument or a folder of the user's as its output is one line
``<prog>: error: ...`` and exit status 2, no traceback, and nothing is created, changed or
deleted. Run as files, from a fresh folder, as a user runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from experiments.test_layout import DRIVERS, ENV, ROOT

#: Per driver, a command line whose input does not exist (``{missing}``); its outputs, in
#: the current folder, do not exist yet.
MISSING_INPUT = {
    "experiments/guo2017/guo2017_report.py": ["{missing}/c.toml:{missing}/study:a", "--out", "."],
    "experiments/intervals/auto_rule.py": ["--out", "out", "--data", "{missing}"],
    "experiments/intervals/conformance_report.py": ["{missing}", "out"],
    "experiments/lm/base_vs_instruct.py": ["{missing}", "{missing}", "--out", "out"],
    "experiments/losses_survey/losses_survey_summary.py": ["{missing}"],
    "experiments/losses_survey/study.py": ["{missing}/c.toml", "--out", "out"],
    "experiments/neural_clamping/nc_authors.py": ["--authors-code", "{missing}", "--out", "out"],
    "experiments/neural_clamping/nc_authors_report.py": ["{missing}", "out"],
    "experiments/neural_clamping/nc_figure_fits.py": ["{missing}/c.toml", "{missing}", "m", "out"],
    "experiments/neural_clamping/nc_figures.py": ["{missing}", "out", "slug", "name"],
    "experiments/neural_clamping/nc_objective_check.py": [
        "{missing}/c.toml",
        "{missing}",
        "m",
        "0",
    ],
    "experiments/shift/analysis.py": ["{missing}"],
    "experiments/shift/run.py": ["--data-dir", "{missing}", "--out-root", "."],
    "experiments/wang2021/study.py": ["{missing}/c.toml", "--out", "out"],
    "experiments/wang2021/wang2021_figures.py": ["{missing}", "out"],
}
#: Drivers that read no input (the conformance study simulates its data: its folder rule is
#: tested beside it, ``intervals/test_conformance.py``).
NO_INPUT = {"experiments/wang2021/wang2021_configs.py", "experiments/intervals/conformance.py"}

#: Per driver that writes a folder: the folder its command line above writes (the output is
#: checked before the inputs), made here as the user's, and the argument naming it.
USER_FOLDER = {
    "experiments/guo2017/guo2017_report.py": ("a", "--out"),
    "experiments/intervals/auto_rule.py": ("out", "--out"),
    "experiments/intervals/conformance_report.py": ("out", "OUT"),
    "experiments/lm/base_vs_instruct.py": ("out", "--out"),
    "experiments/neural_clamping/nc_authors.py": ("out", "--out"),
    "experiments/neural_clamping/nc_authors_report.py": ("out", "out"),
    "experiments/neural_clamping/nc_figure_fits.py": ("out", "FITS_OUT"),
    "experiments/neural_clamping/nc_figures.py": ("out", "FIGURES"),
    "experiments/shift/run.py": ("resnet20", "--out-root"),
    "experiments/wang2021/wang2021_figures.py": ("out", "FIGURES"),
}
#: Drivers that write no folder (the configs generator: ``test_wang2021_configs.py``), those
#: that are ``calibkit study`` (its --out rule is the library's: ``tests/study``), and those
#: whose folder rule is tested beside them (``intervals/test_conformance.py``).
NO_FOLDER = {
    "experiments/intervals/conformance.py",
    "experiments/losses_survey/losses_survey_summary.py",
    "experiments/neural_clamping/nc_objective_check.py",
    "experiments/shift/analysis.py",
    "experiments/wang2021/wang2021_configs.py",
    "experiments/losses_survey/study.py",
    "experiments/wang2021/study.py",
}

#: Drivers whose docstring says what they run without arguments: ``calibkit study``'s
#: default (the bundled digits into ./study-digits) and the whole shift study.
DEFAULT_RUN = {
    "experiments/losses_survey/study.py",
    "experiments/wang2021/study.py",
    "experiments/shift/run.py",
}
#: The drivers that are ``calibkit study`` say so in their errors.
PROG = {
    "experiments/losses_survey/study.py": "calibkit",
    "experiments/wang2021/study.py": "calibkit",
}


def _run(driver: str, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / driver), *argv],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() if p.is_file() else b""
        for p in sorted(folder.rglob("*"))
    }


def _refused(driver: str, done: subprocess.CompletedProcess[str]) -> str:
    """The one line of a refusal (exit status 2, no traceback)."""
    prog = PROG.get(driver, Path(driver).name)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"{prog}: error: "), done.stderr
    return done.stderr


def test_every_driver_is_listed_here() -> None:
    """A new driver is added to the tables above (and so is checked)."""
    assert sorted(set(MISSING_INPUT) | NO_INPUT) == DRIVERS
    assert sorted(set(USER_FOLDER) | NO_FOLDER) == DRIVERS
    assert set(MISSING_INPUT).isdisjoint(NO_INPUT)
    assert set(USER_FOLDER).isdisjoint(NO_FOLDER)


@pytest.mark.parametrize("driver", sorted(MISSING_INPUT))
def test_a_missing_input_is_one_line_and_nothing_is_created(driver: str, tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    here = tmp_path / "here"
    here.mkdir()
    argv = [a.format(missing=missing) for a in MISSING_INPUT[driver]]
    err = _refused(driver, _run(driver, argv, here))
    assert str(missing) in err  # the line names the input
    assert list(here.iterdir()) == []
    assert not missing.exists()


@pytest.mark.slow  # argparse's own behaviour, once per driver (the two it was not: their tests)
@pytest.mark.parametrize("driver", sorted(set(DRIVERS) - DEFAULT_RUN))
def test_no_argument_prints_the_usage(driver: str, tmp_path: Path) -> None:
    done = _run(driver, [], tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("usage: ")
    assert "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("driver", sorted(USER_FOLDER))
def test_a_folder_of_the_users_as_output_is_refused_and_kept(driver: str, tmp_path: Path) -> None:
    """The user's folder, holding what the driver would write there (``report.md``,
    ``config.toml``), is refused, naming the output argument, and left as it was."""
    name, argument = USER_FOLDER[driver]
    folder = tmp_path / name
    folder.mkdir()
    (folder / "report.md").write_text("my notes\n", encoding="utf-8")
    (folder / "config.toml").write_text("# my config\n", encoding="utf-8")
    before = _tree(tmp_path)
    missing = str(tmp_path / "missing")
    argv = [a.format(missing=missing) for a in MISSING_INPUT[driver]]
    err = _refused(driver, _run(driver, argv, tmp_path))
    assert err.startswith(f"{Path(driver).name}: error: {argument}: ")
    assert "calibkit did not write (config.toml, report.md)" in err
    assert _tree(tmp_path) == before
