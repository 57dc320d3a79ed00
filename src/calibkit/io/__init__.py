"""The file layer: atomic writes, JSON files, prediction files and TOML configs. It imports
only :mod:`calibkit.core`."""
