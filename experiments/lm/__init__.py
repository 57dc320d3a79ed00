"""Language models, base against instruction-tuned (issue #44, item 5): the whole path from
lm-evaluation-harness ``samples_*.jsonl`` to a calibrated model and its report, on files the
harness writes (``scripts/lm_harness_samples.py``), in ``base_vs_instruct.py``; the page:
``README.md``, its table ``results.md``."""
