"""The sub-models of the Settings tree, one group a file. proxy/settings.py is the
root: it assembles them, reads the environment and re-exports every name."""
