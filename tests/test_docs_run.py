"""Every code block of the README and the library pages (``docs/*.md``) runs as written.

Each ```` ```python ```` block is run alone with ``exec``, and each ```` ```bash ```` block
line by line, every ``calibkit`` command in it (also after ``&&``, or as
``.venv/bin/calibkit``) through :func:`calibkit.cli.main` in-process (comments stripped,
continuation lines joined, ``shlex``-split), expecting exit status 0. Lines that do not
call calibkit (``bash scripts/...``, ``pip``, ``source``) are not run; ```` ```text ````
blocks are output or formats, never run. The write-ups under ``experiments/`` are not run
(their commands take hours; ``tests/test_readme.py`` checks that what they name exists).

Each block runs in a fresh folder ``tmp/repo`` holding small files in the layouts the
pages make (``preds.npz``, ``cal.npz``, ``test.npz``, ``binary.npz``, ``source.npz``,
``target.npz``, ``preds.csv``, in ``out/`` too, where the README makes them, and the
harness's samples folders ``out/lm/base`` and ``out/lm/new``; the README's
snippets that make them from the shared file are run too, and the two are checked to hold
the same arrays), beside links to the repository's ``experiments/`` and ``scripts/``, and
with ``tmp/shared`` the real ``../shared`` beside the repository, so that
``../shared/data/...`` resolves as from a clone. ``tmp/repo`` is a git repository holding
the clone's ``.gitignore`` files: after each README block, ``git status --porcelain`` is
empty (the README's examples write only under ``out/`` or another ignored folder), and no
two of the README's examples name the same output (:func:`outputs`). A block that warns
(a Python warning, or a line of ``calibkit: warning`` or any other warning on stderr) fails.
Rules for what cannot run as written here:

- ``calibkit study`` and ``calibkit shift`` run with ``--smoke`` appended (toy size, the
  same code paths), so a full config is checked end to end in seconds;
- a block right after ``<!-- not run: REASON -->`` (a Ray cluster, a Slurm allocation) is
  reported as skipped with that reason;
- a block naming ``../shared`` or an ``experiments/`` config skips with a reason when the
  data is absent;
- the blocks of :data:`SLOW` (a minute or more each) are marked slow.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import shlex
import shutil
import subprocess
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import SHARED_DATA

ROOT = Path(__file__).resolve().parents[1]
#: lm-evaluation-harness ``--log_samples`` folders of a simulated model
#: (``tests/io/fixtures/lm/README.md``): ``out/lm/base``, and ``out/lm/new`` (new questions).
HARNESS = ROOT / "tests" / "io" / "fixtures" / "lm" / "simulated"
#: The library's pages: the README and docs/*.md (not the experiments' write-ups).
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: A fence, its language and body; ``indent`` lets a fence sit inside a list item.
FENCE = re.compile(
    r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.M | re.S
)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.*?)\s*-->\s*$")
#: The languages a block may have: run (python, bash) or shown (text, toml).
LANGUAGES = {"python", "bash", "text", "toml"}
#: Blocks that take a minute or more (document, a text in the block) -> why.
SLOW: dict[tuple[str, str], str] = {
    ("README.md", "calibkit compare ../shared"): "compares every calibrator on 10,000 rows",
    ("README.md", "calibkit shift"): "corrupts and classifies CIFAR-10 images",
    ("README.md", "seed_bird_cat.toml"): "trains LeNets and a ResNet-20 (smoke size)",
    ("README.md", "calibkit demo"): "trains an MLP and compares every calibrator",
    ("docs/shift.md", "ck.run_shift("): "corrupts and classifies 3,500 CIFAR-10 images",
    ("docs/studies.md", "--executor ray"): "starts a local Ray",
}


@dataclass(frozen=True)
class Block:
    """One fenced block: its document (relative to the repository), first line and text."""

    document: str
    line: int
    lang: str
    text: str
    not_run: str | None

    @property
    def id(self) -> str:
        return f"{self.document}:{self.line}-{self.lang}"


def blocks(text: str, document: str) -> list[Block]:
    """The fenced blocks of a Markdown ``text``, dedented, with their not-run reason."""
    found = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        reason = NOT_RUN.search(before)
        indent = len(m.group("indent"))
        body = "".join(row[indent:] for row in m.group("body").splitlines(keepends=True))
        found.append(Block(document, line, m.group("lang"), body, reason and reason.group(1)))
    return found


def commands(block: str) -> list[list[str]]:
    """Each ``calibkit`` command of a shell block, as the arguments after ``calibkit``."""
    joined = re.sub(r"\\\n", " ", block)
    found = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        segment: list[str] = []
        for word in [*words, "&&"]:
            if word not in ("&&", ";"):
                segment.append(word)
                continue
            if segment and (segment[0] == "calibkit" or segment[0].endswith("/calibkit")):
                found.append(segment[1:])
            segment = []
    return found


def as_run(argv: list[str]) -> list[str]:
    """``argv`` with ``--smoke`` appended to ``study`` and ``shift`` (see the module)."""
    rest = list(argv)
    while rest and rest[0].startswith("--"):  # global options (--threads N)
        rest = rest[2:] if rest[0] == "--threads" else rest[1:]
    smoke = rest[:1] in (["study"], ["shift"]) and not {"--smoke", "--report-only"} & set(rest)
    return [*argv, "--smoke"] if smoke else list(argv)


ALL = [
    b for doc in DOCUMENTS for b in blocks(doc.read_text("utf-8"), doc.relative_to(ROOT).as_posix())
]
RUN = [b for b in ALL if (b.lang == "python" or (b.lang == "bash" and commands(b.text)))]


def _params(items: list[Block]) -> list[Any]:
    params = []
    for b in items:
        slow = any(doc == b.document and text in b.text for doc, text in SLOW)
        marks = [pytest.mark.slow] if slow and not b.not_run else []
        params.append(pytest.param(b, id=b.id, marks=marks))
    return params


# ---------------------------------------------------------------------------------------
# The folder a block runs in


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def make_files(folder: Path, n: int = 1200, k: int = 10, seed: int = 0) -> None:
    """Small prediction files in the layouts the pages make (arrays named as there)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k)) + 3.0 * np.eye(k)[labels]
    probs = _softmax(2.0 * logits)  # overconfident
    site = np.array(["a", "b"])[np.arange(n) % 2]
    half = n // 2
    np.savez(folder / "preds.npz", probs=probs, labels=labels, site=site)
    np.savez(folder / "cal.npz", probs=probs[:half], labels=labels[:half])
    np.savez(folder / "test.npz", probs=probs[half:], labels=labels[half:])
    two = _softmax(logits[:, :2])
    np.savez(folder / "binary.npz", probs=two, labels=(labels % 2))
    np.savez(folder / "source.npz", probs=probs[:half], labels=labels[:half])
    rows = np.flatnonzero((labels[half:] < 3) | (np.arange(n - half) % 5 == 0)) + half
    np.savez(folder / "target.npz", probs=probs[rows])
    header = ",".join(["label", *(f"prob_{j}" for j in range(k)), "site"])
    lines = [
        ",".join([str(y), *(f"{p:.17g}" for p in row), s])
        for y, row, s in zip(labels, probs / probs.sum(1, keepdims=True), site, strict=True)
    ]
    (folder / "preds.csv").write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")


MADE = ("preds.npz", "cal.npz", "test.npz", "binary.npz", "source.npz", "target.npz")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp/repo`` as the current folder: the small files, ``experiments/`` and ``scripts/``
    linked, and ``tmp/shared`` the real ``../shared`` when it is there."""
    folder = tmp_path / "repo"
    folder.mkdir()
    for name in ("experiments", "scripts"):
        (folder / name).symlink_to(ROOT / name, target_is_directory=True)
    if SHARED_DATA.parent.is_dir():
        (tmp_path / "shared").symlink_to(SHARED_DATA.parent, target_is_directory=True)
    make_files(folder)
    (folder / "out").mkdir()
    make_files(folder / "out")  # where the README makes them
    for name in ("base", "new"):  # a language model's samples (docs/language-models.md)
        shutil.copytree(HARNESS / name, folder / "out" / "lm" / name)
    for ignore in (".gitignore", "out/.gitignore"):  # the clone's
        shutil.copyfile(ROOT / ignore, folder / ignore)
    _git(folder, "init", "-q")
    _git(folder, "add", "-A")
    _git(folder, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "clone")
    monkeypatch.chdir(folder)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return folder


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True, check=True)
    return done.stdout


def untracked(folder: Path) -> list[str]:
    """What ``git status --porcelain`` shows in ``folder``: files written outside the
    ignored folders (``out/``, ``study-digits/``, ...) or tracked files changed."""
    return _git(folder, "status", "--porcelain", "--untracked-files=all").splitlines()


def _needs_shared(block: Block) -> None:
    if ("../shared" in block.text or "experiments/" in block.text) and not SHARED_DATA.is_dir():
        pytest.skip(f"needs ../shared/data beside the repository ({SHARED_DATA} is absent)")


# ---------------------------------------------------------------------------------------
# Running blocks


def run_python(block: Block, caught: list[str] | None = None) -> dict[str, Any]:
    """Run a Python block in the current folder; its namespace (the warnings it raised
    added to ``caught``)."""
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    code = compile(block.text, f"{block.document}:{block.line}", "exec")
    with _closing_figures(), _warnings(caught):
        exec(code, namespace)
    return namespace


def run_commands(block: Block, caught: list[str] | None = None) -> list[str]:
    """Run each calibkit command of a shell block; the commands that failed, with status
    (the Python warnings they raised added to ``caught``)."""
    from calibkit.cli import main

    failed = []
    for argv in commands(block.text):
        with _closing_figures(), _warnings(caught):
            status = main(as_run(argv))
        if status != 0:
            failed.append(f"calibkit {shlex.join(as_run(argv))}: exit status {status}")
    return failed


@contextlib.contextmanager
def _warnings(caught: list[str] | None) -> Iterator[None]:
    """Every warning raised inside, whatever the filters (pytest's ignores too), as
    ``Category: message`` in ``caught``."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            if caught is not None:
                caught += [f"{w.category.__name__}: {w.message}" for w in seen]


#: A line of stderr that warns: calibkit's ``calibkit: warning: ...``, Python's
#: ``...Warning: ...`` and a logger's ``W1207 ...`` / ``WARNING ...``.
WARNING_LINE = re.compile(r"warning|^W\d{4} ", re.I)


def warned(caught: list[str], stderr: str) -> list[str]:
    """The warnings of a block: those raised, then the lines of its stderr that warn."""
    return [*caught, *(line for line in stderr.splitlines() if WARNING_LINE.search(line))]


@contextlib.contextmanager
def _closing_figures() -> Iterator[None]:
    try:
        yield
    finally:
        import sys

        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")


@pytest.mark.parametrize("block", _params([b for b in RUN if b.lang == "python"]))
def test_python_block_runs(block: Block, repo: Path, capfd: pytest.CaptureFixture[str]) -> None:
    if block.not_run:
        pytest.skip(block.not_run)
    _needs_shared(block)
    caught: list[str] = []
    namespace = run_python(block, caught)
    assert warned(caught, capfd.readouterr().err) == []
    for marker, check in CHECKS.items():
        if marker in block.text:
            check(namespace, repo)
    if block.document == "README.md":
        assert untracked(repo) == []


@pytest.mark.parametrize("block", _params([b for b in RUN if b.lang == "bash"]))
def test_calibkit_commands_run(block: Block, repo: Path, capfd: pytest.CaptureFixture[str]) -> None:
    if block.not_run:
        pytest.skip(block.not_run)
    _needs_shared(block)
    caught: list[str] = []
    assert run_commands(block, caught) == []
    assert warned(caught, capfd.readouterr().err) == []
    if block.document == "README.md":
        assert untracked(repo) == []


# ---------------------------------------------------------------------------------------
# What some blocks must also have done (beyond running)


def _quick_start(ns: dict[str, Any], folder: Path) -> None:
    assert 1.2 < ns["ts"].temperature_ < 2.0
    assert (folder / "out" / "ts.json").exists()


def _made_files(ns: dict[str, Any], folder: Path) -> None:
    """The README's files hold the arrays the small files of :func:`make_files` hold."""
    other = folder.parent / "small"
    other.mkdir()
    make_files(other)
    for name in MADE:
        if (folder / "out" / name).exists():
            with np.load(folder / "out" / name) as made, np.load(other / name) as small:
                assert sorted(made.files) == sorted(small.files), name


def _pytorch(ns: dict[str, Any], folder: Path) -> None:
    """The program and the ONNX file of the README take any number of rows (issue #46,
    item 1: the file refused 7 rows, "Got: 7 Expected: 1000")."""
    import onnxruntime
    import torch

    assert 1.0 < ns["ts"].temperature_ < 3.0  # overconfident, as the snippet says
    assert sorted(p.name for p in (folder / "out").glob("calibrated.onnx*")) == ["calibrated.onnx"]
    session = onnxruntime.InferenceSession(str(folder / "out" / "calibrated.onnx"))
    for rows in (7, 1, len(ns["x"])):
        x = ns["x"][:rows]
        with torch.no_grad():
            expected = ns["deployed"](x)
        assert torch.allclose(ns["program"].module()(x), expected)
        (probs,) = session.run(None, {"x": x.numpy()})
        np.testing.assert_allclose(probs, expected.numpy(), atol=1e-6)


def _streaming(ns: dict[str, Any], folder: Path) -> None:
    assert 0.0 < ns["metric"].compute()["ece"] < 1.0


def _sklearn(ns: dict[str, Any], folder: Path) -> None:
    assert ns["proba"].shape == (1000, 3)
    assert (folder / "out" / "forest.png").stat().st_size > 0


def _three_answers(ns: dict[str, Any], folder: Path) -> None:
    import torch

    answers, cp = ns["answers"], ns["cp"]
    assert answers.probs.shape == (2000, 10)
    assert answers.accept.dtype == bool
    assert abs(float(answers.accept.mean()) - 0.8) < 0.05  # the coverage asked for
    assert torch.equal(ns["accept"], torch.from_numpy(answers.accept))
    assert cp.selective(0.8).risk <= cp.selective(0.8).risk_upper


def _conformal(ns: dict[str, Any], folder: Path) -> None:
    import calibkit as ck

    loaded = ck.load(folder / "raps.json")
    assert (loaded.predict_set(ns["logits"][5000:]) == ns["sets"]).all()


def _label_shift(ns: dict[str, Any], folder: Path) -> None:
    import calibkit as ck

    loaded = ck.load(folder / "label_shift.json")
    assert (loaded.target_priors_ == ns["adapter"].target_priors_).all()
    assert float(loaded.target_priors_[:3].sum()) > 0.5  # classes 0-2 made frequent


def _groups(ns: dict[str, Any], folder: Path) -> None:
    gts = ns["gts"]
    temps = dict(zip(gts.group_names_, gts.group_temperatures_.tolist(), strict=True))
    assert ns["res"].worst_group == "b"
    assert temps["a"] < 1.2 < 2.5 < temps["b"]


def _compare(ns: dict[str, Any], folder: Path) -> None:
    assert ns["comp"].recommendation.method in {"temperature", "vector", "dirichlet"}


def _shift(ns: dict[str, Any], folder: Path) -> None:
    assert ns["result"].n_test == 500
    assert ns["report"].document.verdict.headline.startswith("Calibration ")
    assert (folder / "shift" / "report.html").exists()


#: A text of a block -> what its run must also show.
CHECKS: dict[str, Callable[[dict[str, Any], Path], None]] = {
    'ts.save("out/ts.json")': _quick_start,
    'np.savez("out/preds.npz"': _made_files,
    'np.savez("out/source.npz"': _made_files,
    "ck.CalibratedModel(": _pytorch,
    "ck.StreamingCalibration(": _streaming,
    "ck.CalibratedClassifier(": _sklearn,
    "cp.predict_all(": _three_answers,
    'cp.save("raps.json")': _conformal,
    "ck.PriorShiftAdapter(": _label_shift,
    "ck.evaluate_groups(": _groups,
    "ck.compare(": _compare,
    "ck.run_shift(": _shift,
}


# ---------------------------------------------------------------------------------------
# The test itself


def test_every_check_has_its_block() -> None:
    """A check whose block was moved or rewritten would silently stop checking."""
    texts = [b.text for b in RUN if b.lang == "python"]
    assert [m for m in CHECKS if not any(m in t for t in texts)] == []
    assert [k for k in SLOW if not any(k[0] == b.document and k[1] in b.text for b in RUN)] == []


def test_every_block_has_a_known_language() -> None:
    """An output example is ```text, never an unlabelled fence that might be a command."""
    bad = [b.id for b in ALL if b.lang not in LANGUAGES]
    assert bad == []


def test_the_pages_have_blocks_to_run() -> None:
    docs = {b.document for b in RUN}
    assert {"README.md", "docs/metrics.md", "docs/conformal.md", "docs/label-shift.md"} <= docs
    assert sum(len(commands(b.text)) for b in RUN if b.lang == "bash") >= 30
    assert len([b for b in ALL if b.not_run]) <= 3  # running is the rule


def test_a_failing_block_is_caught(repo: Path) -> None:
    page = (
        "Text.\n\n```bash\ncalibkit evaluate preds.npz --n-boot 0   # fine\n"
        "calibkit evaluate absent.npz \\\n    --n-boot 0\n```\n\n"
        "```python\nraise ValueError('the snippet is wrong')\n```\n\n"
        "<!-- not run: needs a cluster -->\n```bash\ncalibkit study CONFIG\n```\n"
    )
    shell, python, cluster = blocks(page, "page.md")
    assert run_commands(shell) == ["calibkit evaluate absent.npz --n-boot 0: exit status 2"]
    with pytest.raises(ValueError, match="the snippet is wrong"):
        run_python(python)
    assert cluster.not_run == "needs a cluster"


#: The options of a command that name what it writes.
OUTPUT_OPTIONS = ("--out", "-o", "--plot", "--smooth-plot", "--rc-plot")
#: What a Python snippet writes: the first string argument of a writing call.
WRITES = re.compile(r'(?:np\.savez|\.save|\.savefig|export_onnx)\([^"\n]*"([^"]+)"')


def outputs(document: str) -> list[str]:
    """Every path the examples of ``document`` (a README's text) write, as spelt there, in
    order: the Python blocks' ``np.savez``, ``.save``, ``.savefig`` and ``export_onnx``,
    and the commands' :data:`OUTPUT_OPTIONS`."""
    found: list[str] = []
    for block in blocks(document, "README.md"):
        if block.lang == "python":
            found += WRITES.findall(block.text)
        elif block.lang == "bash":
            for argv in commands(block.text):
                found += [v for o, v in itertools.pairwise(argv) if o in OUTPUT_OPTIONS]
    return [path.rstrip("/") for path in found]


def test_the_readme_writes_each_file_once_under_out() -> None:
    """Issue #46, item 10: following the README left about 25 files in the clone's root, two
    examples both writing ``rel.png`` (and two compares ``report/``)."""
    found = outputs((ROOT / "README.md").read_text("utf-8"))
    assert len(found) >= 20
    assert [p for p in found if not p.startswith("out/")] == []
    assert sorted(p for p in set(found) if found.count(p) > 1) == []
    ignored = _git(ROOT, "check-ignore", "--no-index", *found).split()
    assert ignored == found  # the clone's .gitignore files keep them out of git status


def test_outputs_are_found_where_an_example_writes() -> None:
    page = (
        '```python\nnp.savez("a.npz", x=x)\nts.save("t.json")\nfig.savefig("rel.png")\n'
        'ck.export_onnx(m, x, "m.onnx")\n```\n\n```bash\ncalibkit evaluate p.npz --plot '
        "rel.png\ncalibkit fit --method temperature p.npz -o c.json\ncalibkit compare p.npz"
        " --out r/\n```\n"
    )
    assert outputs(page) == ["a.npz", "t.json", "rel.png", "m.onnx", "rel.png", "c.json", "r"]


def test_a_block_that_warns_is_caught(repo: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Issue #46, item 7: the README's deploy snippet fitted on random labels and printed a
    BoundWarning (and torch's warnings); a block that warns now fails."""
    rng = np.random.default_rng(0)
    np.savez("noise.npz", logits=rng.normal(size=(300, 3)), labels=rng.integers(0, 3, 300))
    page = (
        "```python\nimport warnings\nwarnings.warn('careful', FutureWarning)\n```\n\n"
        "```bash\ncalibkit fit --method temperature noise.npz -o t.json\n```\n"
    )
    python, shell = blocks(page, "page.md")
    caught: list[str] = []
    run_python(python, caught)
    assert caught == ["FutureWarning: careful"]
    capfd.readouterr()
    caught = []
    assert run_commands(shell, caught) == []
    found = warned(caught, capfd.readouterr().err)
    assert len(found) == 1
    assert found[0].startswith("calibkit: warning: temperature: T reached its upper bound")


def test_a_file_written_outside_the_ignored_folders_is_caught(repo: Path) -> None:
    assert untracked(repo) == []
    (repo / "out" / "fine.png").write_bytes(b"ignored")
    (repo / "study-digits").mkdir()
    (repo / "study-digits" / "fine.csv").write_text("ignored")
    assert untracked(repo) == []
    (repo / "rel.png").write_bytes(b"left in the clone")
    (repo / "preds.npz").write_bytes(b"a tracked file changed")
    assert untracked(repo) == [" M preds.npz", "?? rel.png"]


def test_commands_are_parsed_as_a_shell_would() -> None:
    block = (
        "source .venv/bin/activate && calibkit --version   # on the PATH\n"
        "calibkit evaluate preds.npz --extra tests \\\n    --n-boot 0  # a comment\n"
        "                                                    # a note under a line\n"
        ".venv/bin/calibkit methods\n"
        "bash scripts/demo.sh\n"
        "calibkit --threads 1 study\n"
        "calibkit study CONFIG --smoke\n"
    )
    found = commands(block)
    assert found == [
        ["--version"],
        ["evaluate", "preds.npz", "--extra", "tests", "--n-boot", "0"],
        ["methods"],
        ["--threads", "1", "study"],
        ["study", "CONFIG", "--smoke"],
    ]
    assert [as_run(a)[-1] for a in found] == ["--version", "0", "methods", "--smoke", "--smoke"]
    assert as_run(["study", "CONFIG", "--smoke"]).count("--smoke") == 1
