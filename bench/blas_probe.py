"""Which BLAS this process mapped (the Debian libblas.so.3 alternative): shared by the PyTorch peers."""
import os


def loaded_blas():
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if ".so" in line}
    except OSError:
        return "unknown"
    for key in ("mkl", "openblas", "blis", "atlas"):
        if any(key in os.path.basename(l) or "/%s" % key in l for l in libs):
            return key
    return "reference" if any("libblas.so" in l for l in libs) else "none"
