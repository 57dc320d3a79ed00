"""Conformal predictors (the ``sets`` kind): logits to prediction sets, and the conformity
scores."""
