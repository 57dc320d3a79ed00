"""Prior-shift adapters (the ``priors`` kind): label shift."""
