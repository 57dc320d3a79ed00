"""The core layer: errors, parameter checks, registries, validated classifier outputs, binning
and splits. It imports nothing else of calibkit; every other layer builds on it."""
