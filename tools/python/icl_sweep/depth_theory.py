"""The reduced model of deep linear attention of Bordelon, Letey, Pehlevan 2025 (arXiv 2510.01098), in our units.

L layers with one preconditioner Gamma shared by all of them and the 1/L residual are L steps of preconditioned
GD from w = 0: w_L = (I - (I - Gamma S / L)^L) w, S = (1/n) sum_i x_i x_i^T (noiseless labels).  In the engine
this is `param = sparse_a, tie = true, residual = 1/L` (Q = [[Gamma, 0], [0, 0]]).  A query x ~ N(0, Sigma)
gives the loss (w - w_L)^T Sigma (w - w_L); with w ~ N(0, I):
- ISO (Sigma = I, Gamma = gamma I): loss = sum_i (1 - gamma mu_i / L)^(2L) over the eigenvalues mu_i of S,
  so loss / d -> the Marchenko-Pastur average of (1 - gamma lambda / L)^(2L) as d -> inf at alpha = n / d
  (`iso_loss`).  At alpha -> inf, S -> I and gamma = L gives 0 at every L: depth helps only while the
  context is limited.  FS likewise (Gamma = L Sigma^-1).
- RRS (S -> O Lambda O^T, a new rotation O in every context): at alpha -> inf, with Gamma = gamma I, loss ->
  min over gamma of sum_k lambda_k (1 - gamma lambda_k / L)^(2L) > 0, falling with L (`rotated_limit`): depth
  helps at any context length.  A non-symmetric Gamma can do better at L >= 8, so for the shared-Gamma class
  these are upper bounds.
Both objectives are convex in gamma (sums of convex (1 - c gamma)^(2L)), so their optimum is found exactly."""
import numpy as np

_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(400)


def _mp_average(f, alpha):
    """The Marchenko-Pastur average of f(lambda) for S = (1/n) X^T X, n = alpha d, d -> inf: the atom
    (1 - alpha) f(0) when alpha < 1 and the density sqrt((l+ - l)(l - l-)) / (2 pi q l), q = 1 / alpha,
    integrated with l = c + r cos(theta) (c = 1 + q, r = 2 sqrt(q)), which removes the square-root ends."""
    q = 1.0 / alpha
    c, r = 1.0 + q, 2.0 * np.sqrt(q)
    theta = 0.5 * np.pi * (_NODES + 1.0)
    lam = c + r * np.cos(theta)
    density = (r * np.sin(theta)) ** 2 / (2.0 * np.pi * q * lam)   # times d(lambda) = r sin(theta) d(theta)
    smooth = 0.5 * np.pi * np.sum(_WEIGHTS * density * f(lam))
    return smooth + max(0.0, 1.0 - alpha) * f(np.zeros(1))[0]


def _convex_min(f, hi, tol=1e-12):
    """argmin and min of a convex f on [0, hi] by golden section (raises if the minimum is at hi)."""
    g = (np.sqrt(5.0) - 1.0) / 2.0
    a, b = 0.0, hi
    while b - a > tol * max(1.0, hi):
        x1, x2 = b - g * (b - a), a + g * (b - a)
        if f(x1) <= f(x2):
            b = x2
        else:
            a = x1
    x = 0.5 * (a + b)
    if x > hi * (1.0 - 1e-6):
        raise ValueError(f"the optimum is not inside [0, {hi}]")
    return x, f(x)


def iso_loss(L, alpha, gamma=None):
    """(gamma*, loss / d) of the ISO reduced model at depth L and alpha = n / d, d -> inf; gamma* optimal
    unless `gamma` is given.  L = 1 gives gamma* = alpha / (1 + alpha), loss / d = 1 / (1 + alpha)."""
    def loss(gm):
        return _mp_average(lambda lam: (1.0 - gm * lam / L) ** (2 * L), alpha)
    if gamma is not None:
        return gamma, loss(gamma)
    edge = (1.0 + np.sqrt(1.0 / alpha)) ** 2
    return _convex_min(loss, 4.0 * L / edge)


def rotated_limit(spectrum, L):
    """(gamma*, loss) of the RRS reduced model with Gamma = gamma I at alpha -> inf: min over gamma of
    sum_k lambda_k (1 - gamma lambda_k / L)^(2L), in our units (not divided by d)."""
    lam = np.asarray(spectrum, dtype=float)

    def loss(gm):
        return float(np.sum(lam * (1.0 - gm * lam / L) ** (2 * L)))
    return _convex_min(loss, 4.0 * L / lam.min())


def _haar(rng, count, d):
    """count rotations drawn from the Haar measure (QR of Gaussian matrices, signs fixed by R's diagonal)."""
    q, r = np.linalg.qr(rng.standard_normal((count, d, d)))
    return q * np.sign(np.diagonal(r, axis1=1, axis2=2))[:, None, :]


def reduced_loss(G, L, n, spectrum=None, contexts=4000, seed=0):
    """Mean and standard error over `contexts` Monte Carlo contexts of the reduced model's loss with
    preconditioner G (d x d, any matrix: w <- w - (1/L) G S (w - w*) L times from w = 0), noiseless,
    w ~ N(0, I): ISO (spectrum None) or RRS (Sigma = O diag(spectrum) O^T, O Haar, new in every context)."""
    G = np.asarray(G, dtype=float)
    d = len(G)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((contexts, n, d))
    sigma = None
    if spectrum is not None:
        O = _haar(rng, contexts, d)
        root = O * np.sqrt(np.asarray(spectrum, dtype=float))[None, None, :]   # Sigma^1/2 = O diag(sqrt l) O^T
        root = root @ np.transpose(O, (0, 2, 1))
        x = x @ root
        sigma = root @ root
    S = np.einsum("cni,cnj->cij", x, x) / n
    step = np.eye(d) - np.einsum("ij,cjk->cik", G, S) / L
    e = rng.standard_normal((contexts, d))   # w - w_0
    for _ in range(L):
        e = np.einsum("cij,cj->ci", step, e)
    loss = (e * e).sum(1) if sigma is None else np.einsum("ci,cij,cj->c", e, sigma, e)
    return loss.mean(), loss.std(ddof=1) / np.sqrt(contexts)


def iso_finite_d(L, alpha, d, gamma, contexts, seed=0):
    """Mean, its standard error and the median over `contexts` Wishart draws (n = alpha d) of the ISO reduced
    model's loss / d at preconditioner gamma I: the finite-d counterpart of iso_loss.  At small d the mean is
    ruled by the rare contexts whose top eigenvalue passes 2 L / gamma, where (1 - gamma mu / L)^(2L) grows
    without bound; the median follows the d -> inf law long before the mean does."""
    rng = np.random.default_rng(seed)
    n = int(round(alpha * d))
    values = np.empty(contexts)
    for c in range(contexts):
        x = rng.standard_normal((n, d))
        mu = np.linalg.eigvalsh(x.T @ x / n)
        values[c] = np.mean((1.0 - gamma * mu / L) ** (2 * L))
    return values.mean(), values.std(ddof=1) / np.sqrt(contexts), np.median(values)
