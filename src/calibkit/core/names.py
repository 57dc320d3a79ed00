"""The names of the image datasets, the corruptions, the study executors and a language
model's file layouts, declared once without importing them (the calibrators and models are
in :mod:`calibkit.core.catalog`).

The registries that implement them declare their entries from here
(:data:`calibkit.data.DATASETS`, :data:`calibkit.data.CORRUPTIONS`; each loader or
corruption then registers under its name, its metadata beside it), the executors of
:func:`calibkit.study.make_executor` and the layouts of :mod:`calibkit.io.lm_files` are
these; the command line checks a name against them before importing numpy or torch. A name
is added here and registered where it is implemented: a declared name that its module does
not register is refused when it is asked for, naming that module.

>>> DATASETS[0], CORRUPTIONS[0], EXECUTORS
('digits', 'gaussian_noise', ('serial', 'processes', 'ray'))
"""

from __future__ import annotations

#: The image datasets by name, in the order of ``calibkit.data.DATASETS.names()``.
DATASETS = ("digits", "cifar10-jpeg", "cifar10", "cifar100", "bloodmnist", "imagenet-val")
#: The corruptions by name (CIFAR-10-C's 15 but frost, then the extras), in the order of
#: ``calibkit.data.CORRUPTIONS.names()``.
CORRUPTIONS = (
    *("gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "glass_blur"),
    *("motion_blur", "zoom_blur", "snow", "fog", "brightness", "contrast"),
    *("elastic_transform", "pixelate", "jpeg_compression", "speckle_noise"),
    *("gaussian_blur", "saturate"),
)
#: The executors that run a study's units (``calibkit study --executor``), the default first.
EXECUTORS = ("serial", "processes", "ray")
#: The file layouts of a language model's answers (``--layout``,
#: :func:`calibkit.io.lm_files.read_lm_file`), each with the file suffixes it reads (a folder:
#: ``lm-eval`` only).
LM_LAYOUTS: dict[str, tuple[str, ...]] = {
    "lm-eval": (".jsonl",),
    "chat-logprobs": (".jsonl",),
    "option-logprobs": (".csv", ".jsonl"),
    "stated-confidence": (".csv", ".jsonl"),
}
#: The lm-eval harness's normalisations of the option log-likelihoods (``--length-norm``,
#: ``process_results``), by the name of the metric they give, with what each divides by.
LM_LENGTH_NORMS = {
    "acc_norm": "the option's length in characters",
    "acc_bytes": "the option's length in UTF-8 bytes",
}


def either(choices: tuple[str, ...]) -> str:
    """The names in words: ``a, b or c``.

    >>> either(EXECUTORS), either(("em",))
    ('serial, processes or ray', 'em')
    """
    return " or ".join(filter(None, (", ".join(choices[:-1]), choices[-1])))
