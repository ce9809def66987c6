"""The DRLA command line: ``python -m drla --help``."""
