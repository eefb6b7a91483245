"""Python side of icl-sweep: load result files (`load`: a pandas DataFrame, one row per point; `open_sweep`:
everything in the file) and report on them (`icl-report`, `icl-halving-check`, `icl-lu-theory`).
Installable: pyproject.toml at the top of the source tree (README, "Reports and Python")."""
from .load import Sweep, load, open_sweep

__all__ = ["Sweep", "load", "open_sweep"]
