"""Calibrators of logits (the ``logits`` kind): logits to calibrated probabilities."""
