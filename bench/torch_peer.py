#!/usr/bin/python3
"""PyTorch (CPU, single thread, float32) performance peer for the icl-sweep training loop.

One step = sample a fresh task batch + forward + backward + global-norm clip + Adam update.

Data (per task, B tasks): w ~ N(0, I_d); x_1..x_{n+1} ~ N(0, I_d); y_i = <w, x_i> (noiseless).
Z is (d+1) x (n+1): column i = (x_i, y_i) for the n context columns, query column = (x_{n+1}, 0);
target y_q = <w, x_{n+1}>.

Model: L layers, one head, trainable P_l, Q_l in R^{(d+1)x(d+1)}, init N(0, 0.05^2) (seeded);
    Z <- Z + (1/n) P_l (Zc Zc^T) Q_l Z,   Zc = Z[:, :, :n]   (= Z M Z^T, M = diag(1,..,1,0))
every column (the query's too) is updated; yhat = -Z_L[d, n]; loss = mean_b (yhat - y_q)^2.
Optimiser: clip_grad_norm_(1.0) then Adam(lr=1e-3, betas=(0.9, 0.999), eps=1e-8).

Implementation notes (what makes it fast on the Debian 1.13 CPU build):
  * P and Q are stored as two stacked (L, d+1, d+1) parameters, so clipping and Adam touch two
    tensors instead of 2L (identical maths: global norm and Adam are elementwise / whole-set).
  * Association order: S = Zc Zc^T (batched, B x (d+1)^2) first, then the small shared products
    A = P S Q as *folded* GEMMs over the whole batch ((B(d+1)) x (d+1) @ (d+1) x (d+1)), using
    P S = (S P^T)^T because S is symmetric, and only then A @ Z (batched, fused with the residual
    add via baddbmm).
  * Two formulations of the two batched products are available: "bmm" (torch.bmm / baddbmm) and
    "bcast" (broadcast-multiply + sum).  This build has no MKL, so bmm loops over the batch calling
    BLAS once per tiny matrix (~1 us each); for small d the broadcast form is faster.  --impl auto
    (default) times both during warm-up and keeps the faster one (reported as impl=...).
  * Data are sampled under torch.no_grad(); one y for all n+1 columns via one batched product.
  * torch.compile does not exist in 1.13; torch.jit.script of the forward did not help (the time
    is in the batched products, not in Python), so this is plain eager.
  * The BLAS actually loaded is reported (blas=...).  Debian's default libblas.so.3 is the
    reference (netlib) BLAS; `apt-get install libopenblas0-pthread` makes the folded GEMMs ~10x
    faster and is the fair configuration for a comparison.

Note: the layer map is cubic, so the L-layer output is a degree-3^L polynomial of the data; for
d=10, n=20, L=7 the loss has large spikes even at init and, with lr=1e-3, float32 training overflows
(inf, then NaN) after ~100 steps.  The published setting for that shape is lr=1e-4 (--lr 1e-4).
Step time is the same either way (measured), so this does not affect the benchmark.

Usage:
  /usr/bin/python3 bench/torch_peer.py --d 5 --n 20 --layers 3 --batch 1000            # ~15 s timed
  /usr/bin/python3 bench/torch_peer.py --d 5 --n 20 --layers 3 --batch 1000 --steps 500 --warmup 20
  /usr/bin/python3 bench/torch_peer.py --d 5 --n 20 --layers 3 --batch 1000 --check-steps 3000
Benchmark output (stdout, one line):
  torch_steps_per_s <v> d=<d> n=<n> layers=<L> batch=<B> steps=<N> ... final_loss=<v> ...
"""

import argparse
import copy
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blas_probe import loaded_blas  # noqa: E402

# Single thread everywhere, set before torch (and its BLAS / OpenMP) are loaded.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--d", type=int, default=5, help="input dimension d")
    p.add_argument("--n", type=int, default=20, help="context length n")
    p.add_argument("--layers", type=int, default=3, help="number of layers L")
    p.add_argument("--batch", type=int, default=1000, help="tasks per step B")
    p.add_argument("--steps", type=int, default=0,
                   help="timed steps; 0 (default) = run for --seconds instead")
    p.add_argument("--seconds", type=float, default=15.0,
                   help="target duration of the timed run when --steps is 0 (default 15)")
    p.add_argument("--warmup", type=int, default=20, help="untimed warm-up steps (default 20)")
    p.add_argument("--check-steps", type=int, default=0,
                   help="correctness mode: train N steps, print the loss every 100 steps")
    p.add_argument("--print-every", type=int, default=100, help="loss print interval for --check-steps")
    p.add_argument("--impl", choices=("auto", "bmm", "bcast"), default="auto",
                   help="batched-product formulation (default auto = faster of the two)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--clip", type=float, default=1.0, help="global gradient-norm clip")
    p.add_argument("--init-std", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if min(a.d, a.n, a.layers, a.batch) < 1:
        p.error("--d, --n, --layers and --batch must be >= 1")
    return a


args = parse_args()

try:
    import torch
except ImportError as exc:  # pragma: no cover - environment dependent
    sys.stderr.write(
        "torch_peer.py: cannot import torch (%s).\n"
        "Install PyTorch with `apt-get install -y python3-torch` (Debian 12) and run this script\n"
        "with /usr/bin/python3 (a pyenv/venv python3 does not see Debian's packages).\n" % exc)
    sys.exit(3)

torch.set_num_threads(1)
try:
    torch.set_num_interop_threads(1)
except RuntimeError:  # already set (only possible once per process)
    pass


class LinearTransformer(torch.nn.Module):
    """Stack of L single-head linear-attention layers with shared-over-batch P_l, Q_l."""

    def __init__(self, d, n, layers, init_std, seed, impl):
        super().__init__()
        D = d + 1
        g = torch.Generator().manual_seed(seed)
        self.P = torch.nn.Parameter(torch.randn(layers, D, D, generator=g) * init_std)
        self.Q = torch.nn.Parameter(torch.randn(layers, D, D, generator=g) * init_std)
        self.d, self.n, self.layers, self.c = d, n, layers, 1.0 / n
        self.impl = impl

    def forward(self, Z):
        n, c = self.n, self.c
        bcast = self.impl == "bcast"
        for l in range(self.layers):
            Zc = Z[:, :, :n]                                           # (B, D, n) context
            if bcast:
                S = (Zc.unsqueeze(2) * Zc.unsqueeze(1)).sum(-1)        # (B, D, D)
            else:
                S = torch.bmm(Zc, Zc.transpose(1, 2))                  # (B, D, D)
            # P S = (S P^T)^T (S symmetric): both small products are single folded GEMMs.
            PS = torch.matmul(S, self.P[l].t()).transpose(1, 2).contiguous()
            A = torch.matmul(PS, self.Q[l])                            # (B, D, D) = P S Q
            if bcast:
                Z = torch.add(Z, (A.unsqueeze(-1) * Z.unsqueeze(1)).sum(2), alpha=c)
            else:
                Z = torch.baddbmm(Z, A, Z, alpha=c)                    # Z + c A Z
        return -Z[:, self.d, n]                                        # yhat


class Sampler:
    """Fresh noiseless linear-regression tasks, already laid out as token matrices."""

    def __init__(self, d, n, batch, seed):
        self.d, self.n, self.B = d, n, batch
        self.g = torch.Generator().manual_seed(seed)

    @torch.no_grad()
    def __call__(self):
        d, n, B, g = self.d, self.n, self.B, self.g
        X = torch.randn(B, d, n + 1, generator=g)                      # x_1..x_{n+1} as columns
        w = torch.randn(B, 1, d, generator=g)
        y = torch.bmm(w, X)                                            # (B, 1, n+1): <w, x_i>
        yq = y[:, 0, n].clone()
        y[:, 0, n] = 0.0                                               # query label hidden
        return torch.cat((X, y), dim=1), yq                            # (B, d+1, n+1), (B,)


class Trainer:
    def __init__(self, a):
        self.model = LinearTransformer(a.d, a.n, a.layers, a.init_std, a.seed,
                                       "bmm" if a.impl == "auto" else a.impl)
        self.params = [self.model.P, self.model.Q]
        # With two stacked parameter tensors foreach=True makes no measurable difference
        # (0.2 ms either way); keep the library default.
        self.opt = torch.optim.Adam(self.params, lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
        self.sample = Sampler(a.d, a.n, a.batch, a.seed + 1)
        self.clip = a.clip
        self.first_loss = None                                         # loss of the very first step

    def step(self):
        Z, yq = self.sample()
        self.opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(self.model(Z), yq)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, self.clip)
        self.opt.step()
        loss = loss.detach()
        if self.first_loss is None:
            self.first_loss = loss.item()
        return loss

    def choose_impl(self, trials=4):
        """Time both formulations on real training steps and keep the faster one.

        The model, optimiser and data-generator states are restored afterwards, so the selection
        does not change the training trajectory (step 1 of the run is the first step at init).
        """
        saved = (copy.deepcopy(self.model.state_dict()), copy.deepcopy(self.opt.state_dict()),
                 self.sample.g.get_state())
        best = None
        for impl in ("bmm", "bcast"):
            self.model.impl = impl
            self.step()                                                # first call: allocations
            times = []
            for _ in range(trials):
                t0 = time.perf_counter()
                self.step()
                times.append(time.perf_counter() - t0)
            t = min(times)
            sys.stderr.write("impl %-5s %.2f ms/step (best of %d)\n" % (impl, 1e3 * t, trials))
            if best is None or t < best[0]:
                best = (t, impl)
        self.model.impl = best[1]
        self.model.load_state_dict(saved[0])
        self.opt.load_state_dict(saved[1])
        self.sample.g.set_state(saved[2])
        self.first_loss = None
        return 2 * (trials + 1)


def main(a):
    torch.manual_seed(a.seed)
    tr = Trainer(a)
    used = tr.choose_impl() if a.impl == "auto" else 0
    tag = "d=%d n=%d layers=%d batch=%d" % (a.d, a.n, a.layers, a.batch)
    info = "impl=%s threads=%d blas=%s torch=%s" % (
        tr.model.impl, torch.get_num_threads(), loaded_blas(), torch.__version__)

    if a.check_steps > 0:
        print("# check %s %s lr=%g clip=%g seed=%d (impl selection: %d untimed steps, state restored)"
              % (tag, info, a.lr, a.clip, a.seed, used), flush=True)
        window = []
        for k in range(1, a.check_steps + 1):
            loss = tr.step().item()
            if k == 1:
                print("step 1 loss %.5f" % loss, flush=True)
            window.append(loss)
            if k % a.print_every == 0 or k == a.check_steps:
                print("step %d loss %.5f mean_last_%d %.5f"
                      % (k, loss, len(window), sum(window) / len(window)), flush=True)
                window = []
        return 0

    for _ in range(a.warmup):
        tr.step()
    losses = []
    t0 = time.perf_counter()
    if a.steps > 0:
        for _ in range(a.steps):
            losses.append(tr.step())
    else:
        while True:
            losses.append(tr.step())
            if time.perf_counter() - t0 >= a.seconds:
                break
    dt = time.perf_counter() - t0
    steps = len(losses)
    tail = torch.stack(losses[-100:])
    print("torch_steps_per_s %.3f %s steps=%d warmup=%d select_steps=%d seconds=%.2f %s "
          "initial_loss=%.5f final_loss=%.5f final_loss_mean_last%d=%.5f"
          % (steps / dt, tag, steps, a.warmup, used, dt, info,
             tr.first_loss, losses[-1].item(), tail.numel(), tail.mean().item()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(args))
