"""The file layer: atomic writes, prediction files and TOML configs. It imports only
:mod:`calibkit.core`."""
