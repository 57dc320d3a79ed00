"""A report in the words of its input: a language model's questions and options, not a
classifier's samples and classes.

Every report is written once, in the classifier's words. :func:`in_words` rewrites a
finished :class:`~calibkit.reporting.writer.Report` (its document: title, verdict,
paragraphs, table headers and cells, figure captions; its terminal text) in the
:class:`Vocabulary` of the input's kind (:data:`VOCABULARIES`: ``options``, a multiple-choice
file; ``stated``, a stated confidence), and adds a section saying how the file was read (the
reader's notes: a length normalisation, a filled-in probability mass, padded options). The
numbers (``results.json``) and the commands (text in backticks, options such as
``--n-samples``, file names) are never rewritten.

>>> from calibkit.reporting.document import Document, Paragraph, Verdict
>>> from calibkit.reporting.writer import Report
>>> doc = Document("Report", [Paragraph("ECE on 2,000 samples, 4 classes; per-class `--n-samples`")],
...                Verdict("The model is overconfident on 2,000 samples."))
>>> out = in_words(Report("evaluate", doc, {}, text="2,000 samples, 4 classes"), "options")
>>> out.document.body[0].text, out.text
('ECE on 2,000 questions, 4 options; per-option `--n-samples`', '2,000 questions, 4 options')
>>> out.document.verdict.headline
'The model is overconfident on 2,000 questions.'
"""  # noqa: E501

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from calibkit.reporting import document
from calibkit.reporting.writer import Report


@dataclass(frozen=True)
class Vocabulary:
    """The words of one kind of input, replacing a classifier's (whole words only, keeping a
    leading capital)."""

    #: What a row is ("question"), and its plural.
    row: str
    rows: str
    #: What a column of scores is ("option"), and its plural.
    column: str
    columns: str
    #: What a group is ("task", with ``--groups task``), and its plural.
    group: str = "group"
    groups: str = "groups"

    def words(self) -> dict[str, str]:
        """A classifier's word -> this input's."""
        words = {
            "samples": self.rows,
            "sample": self.row,
            "classes": self.columns,
            "class": self.column,
        }
        if self.group != "group":
            words.update(groups=self.groups, group=self.group)
        return words

    def grouped_by(self, key: str | None) -> Vocabulary:
        """This vocabulary with the groups called by their key: ``task`` (a language
        model's tasks, ``--groups task``) makes "per group" "per task"; any other key
        keeps "group".

        >>> v = VOCABULARIES["options"].grouped_by("task")
        >>> v.words()["groups"]
        'tasks'
        >>> rewrite("Across the groups by task, the worst-group gap; per group (task):", v)
        'Across the tasks, the worst-task gap; per task:'
        """
        if key != "task":
            return self
        return replace(self, group="task", groups="tasks")


#: The vocabulary of each kind of answer (:data:`calibkit.io.lm_outputs.ANSWER_KINDS`).
VOCABULARIES = {
    "options": Vocabulary("question", "questions", "option", "options"),
    "stated": Vocabulary("answer", "answers", "outcome", "outcomes"),
}


def _pattern(words: Sequence[str]) -> re.Pattern[str]:
    alternatives = "|".join(sorted(words, key=len, reverse=True))
    # not inside a name (``n_samples``, ``samples.npz``, ``--n-samples``), nor the idiom
    # "sample size"
    after = r"(?![\w\-/=]|\.\w| size)"
    return re.compile(rf"(?<![\w\-./=])({alternatives}){after}", re.IGNORECASE)


def rewrite(text: str, vocabulary: Vocabulary, keep: Sequence[str] = ()) -> str:
    """``text`` in ``vocabulary``'s words (text in backticks, the texts ``keep`` (the input
    files' paths), and words joined to others by ``-``, ``_``, ``.`` or ``/``, left as they
    are; ``per-class`` becomes ``per-option``).

    >>> v = VOCABULARIES["options"]
    >>> rewrite("Per-class ECE of 10 samples (`calibkit --n-samples 10`).", v)
    'Per-option ECE of 10 questions (`calibkit --n-samples 10`).'
    >>> rewrite("At this sample size, samples.npz holds 10 samples.", v)
    'At this sample size, samples.npz holds 10 questions.'
    >>> rewrite("Read run/classes: 10 samples, 4 classes.", v, keep=["run/classes"])
    'Read run/classes: 10 questions, 4 options.'
    """
    words = vocabulary.words()
    pattern = _pattern(list(words))

    def swap(m: re.Match[str]) -> str:
        new = words[m[1].lower()]
        return new[:1].upper() + new[1:] if m[1][:1].isupper() else new

    kept = [re.escape(k) for k in sorted(set(keep), key=len, reverse=True) if k]
    code = re.compile("(`[^`]*`" + "".join(f"|(?<![\\w.-]){k}(?![\\w-])" for k in kept) + ")")
    parts = code.split(text)
    text = "".join(p if i % 2 else pattern.sub(swap, p) for i, p in enumerate(parts))
    text = re.sub(r"(?i)\b(per)-(class)\b", lambda m: f"{m[1]}-{vocabulary.column}", text)
    if vocabulary.group != "group":  # worst-group gap: worst-task gap; never "tasks by task"
        g, gs = vocabulary.group, vocabulary.groups
        text = re.sub(rf"\b({gs}) by {g}\b|\b(per {g}) \({g}\)", lambda m: m[1] or m[2], text)
        text = re.sub(
            r"(?i)\b(per|worst|best)-(group)\b", lambda m: f"{m[1]}-{vocabulary.group}", text
        )
    return text


def _block(block: document.Block, v: Vocabulary, keep: Sequence[str]) -> document.Block:
    if isinstance(block, document.Paragraph):
        return replace(block, text=rewrite(block.text, v, keep))
    if isinstance(block, document.Table):
        rows = [[replace(c, text=rewrite(c.text, v, keep)) for c in row] for row in block.rows]
        header = [rewrite(h, v, keep) for h in block.header]
        return replace(block, title=rewrite(block.title, v, keep), header=header, rows=rows)
    if isinstance(block, document.Figure):
        return replace(block, caption=rewrite(block.caption, v, keep))
    if isinstance(block, document.Gallery):
        figures = [replace(f, caption=rewrite(f.caption, v, keep)) for f in block.figures]
        return document.Gallery(figures)
    blocks = [_block(b, v, keep) for b in block.blocks]
    return replace(block, title=rewrite(block.title, v, keep), blocks=blocks)  # folded kept


def in_words(
    report: Report,
    answers: str,
    notes: Sequence[str] = (),
    keep: Sequence[str] = (),
    groups: str | None = None,
) -> Report:
    """``report`` in the vocabulary of ``answers`` (a key of :data:`VOCABULARIES`), with a
    section "How the file was read" holding ``notes`` (when there are any); the texts
    ``keep`` (the input files' paths) are never rewritten; ``groups``: the key the rows
    were grouped by (``"task"``: the groups are called tasks, :meth:`Vocabulary.grouped_by`).
    """
    v = VOCABULARIES[answers].grouped_by(groups)
    doc = report.document
    verdict = doc.verdict
    if verdict is not None:
        verdict = document.Verdict(
            rewrite(verdict.headline, v, keep), rewrite(verdict.detail, v, keep)
        )
    body = [_block(b, v, keep) for b in doc.body]
    text = rewrite(report.text, v, keep)
    if notes:
        body.append(
            document.Section("How the file was read", [document.Paragraph(n) for n in notes])
        )
        text += "\n\nhow the file was read:\n" + "\n".join(f"  {n}" for n in notes)
    rewritten = document.Document(rewrite(doc.title, v, keep), body, verdict)
    return replace(report, document=rewritten, text=text)


__all__ = ["VOCABULARIES", "Vocabulary", "in_words", "rewrite"]
