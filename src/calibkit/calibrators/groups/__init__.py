"""Calibrators that take each row's group (the ``groups`` kind)."""
