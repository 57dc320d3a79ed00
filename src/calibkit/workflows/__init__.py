"""Workflows built on the library: comparing calibrators on held-out data, and the demo.
They compute and return results; writing reports is :mod:`calibkit.reporting`'s job."""
