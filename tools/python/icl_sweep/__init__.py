"""Python side of icl-sweep: load result files (`load`, `open_sweep`) and draw reports (`icl-report`)."""
from .load import Sweep, load, open_sweep

__all__ = ["Sweep", "load", "open_sweep"]
