"""Calibrators that take the model and its inputs (the ``model`` kind): Neural Clamping."""
