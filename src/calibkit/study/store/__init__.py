"""What a study keeps on disk: the run folder and its files, the study folder's rule,
record and lock, the identity of a run, and the record of a finished run the report reads.

Above :mod:`calibkit.study.definition`, below :mod:`calibkit.study.run` and
:mod:`calibkit.study.report`: it reads and writes, and fits nothing.
"""
