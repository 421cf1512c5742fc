"""torch is an optional extra (`pip install dlc[torch]`; `make test` installs it): without
it, this folder is skipped rather than failing at import."""

import importlib.util

if importlib.util.find_spec("torch") is None:
    collect_ignore_glob = ["*.py"]
