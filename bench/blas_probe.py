"""Which BLAS this process mapped (the Debian libblas.so.3 alternative): shared by the PyTorch peers.
For OpenBLAS also the core whose kernels it runs ("openblas:Cooperlake"): chosen at load time from the CPU, or
forced by OPENBLAS_CORETYPE, which a cluster's environment may set."""
import ctypes
import os


def _mapped_libs():
    try:
        with open("/proc/self/maps") as f:
            return {line.split()[-1] for line in f if ".so" in line}
    except OSError:
        return set()


def _openblas_core(libs):
    for lib in sorted(libs):
        if "openblas" in os.path.basename(lib):
            try:
                name = ctypes.CDLL(lib).openblas_get_corename
            except (OSError, AttributeError):
                continue
            name.restype = ctypes.c_char_p
            return name().decode()
    return None


def loaded_blas():
    libs = _mapped_libs()
    if not libs:
        return "unknown"
    for key in ("mkl", "openblas", "blis", "atlas"):
        if any(key in os.path.basename(l) or "/%s" % key in l for l in libs):
            core = _openblas_core(libs) if key == "openblas" else None
            return "%s:%s" % (key, core) if core else key
    return "reference" if any("libblas.so" in l for l in libs) else "none"
