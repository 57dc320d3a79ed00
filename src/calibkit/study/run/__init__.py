"""Running a study: the runner, the driver that alone writes the folder, the units of work
(every fit happens in one) and the executors that run them (serial, processes, Ray).

Above :mod:`calibkit.study.store`; the report does not import it.
"""
