"""The engine's training trajectory against PyTorch float64, step by step.

Usage: torch_trajectory.py TRAJECTORY_DUMP

For each configuration below, trajectory_dump trains the point with the engine's own loop (float64) and
prints the initial parameters, the batch of every step and the loss, rate and parameters after every
step.  This script replays the run from the same initial parameters and batches with an independent
implementation: the model written from its definition (model_ref.cpp: per layer
Z <- Z + sum_h c P_h (Z M Z^T) (Q_h Z), M = diag(1, .., 1, 0), yhat = -Z[d, n]), autograd,
torch.optim's Adam / AdamW / SGD, torch.nn.utils.clip_grad_norm_ (over all parameters, or per matrix
for clip_mode = matrix) and torch.optim.lr_scheduler.  Losses, rates and parameters must agree to
TOL at every step; clipping must actually be active.  Then, to show the comparison can fail, the replay
is repeated with beta2 and with the clip threshold perturbed: each must break the agreement.
"""
import json
import subprocess
import sys
import warnings

try:
    import torch
except ImportError:
    sys.exit("FAIL: torch_trajectory needs PyTorch (Debian: python3-torch, installed by tools/deps.sh)")

torch.set_default_dtype(torch.float64)
# SequentialLR steps its second scheduler with an explicit epoch at the milestone, which torch warns about.
warnings.filterwarnings("ignore", message="The epoch parameter in `scheduler.step\\(\\)`")

TOL = 1e-9   # relative, per entry, with a floor of 1e-3 x the largest entry

COMMON = ["d=3", "n=5", "layers=2", "param=full", "batch=8", "steps=10", "precision=float64", "diverge_factor=0"]
CONFIGS = {
    "adamw_global_step": COMMON + ["init_scale=0.2", "optimizer=adamw", "lr=0.02", "weight_decay=0.1", "clip=5",
                                   "clip_mode=global", "schedule=step", "decay_every=3", "warmup=2", "seed=3"],
    "adam_matrix_cosine": COMMON + ["init_scale=0.1", "optimizer=adam", "lr=0.02", "beta1=0.8", "beta2=0.99", "weight_decay=0.05",
                                    "clip=1", "clip_mode=matrix", "schedule=cosine", "warmup=3", "heads=2",
                                    "norm=1", "refresh=2", "noise=fixed:0.1", "seed=4"],
    "sgd_global_constant": COMMON + ["init_scale=0.2", "optimizer=sgd", "lr=0.05", "momentum=0.9", "weight_decay=0.01",
                                     "clip=0.5", "clip_mode=global", "schedule=constant", "seed=5"],
}


def dump(binary, settings):
    out = subprocess.run([binary] + settings, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def worst_rel(a, b):
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    floor = 1e-3 * b.abs().max().item()
    return ((a - b).abs() / (b.abs() + floor)).max().item()


def forward(P, Q, Z0, d, n, layers, heads, c):
    """yhat (B) of the last layer; P[l][h], Q[l][h]: D x D; Z0: B x D x N."""
    M = torch.eye(n + 1)
    M[n, n] = 0.0
    Z = Z0
    for l in range(layers):
        A = Z @ M @ Z.transpose(1, 2)
        Z = Z + sum(c * P[l][h] @ A @ (Q[l][h] @ Z) for h in range(heads))
    return -Z[:, d, n]


def make_optimizer(s, params):
    lr, wd = float(s["lr"]), float(s["weight_decay"])
    betas, eps = (float(s["beta1"]), float(s["beta2"])), float(s["eps"])
    if s["optimizer"] == "adam":
        return torch.optim.Adam(params, lr=lr, betas=betas, eps=eps, weight_decay=wd)
    if s["optimizer"] == "adamw":
        return torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, weight_decay=wd)
    if s["optimizer"] == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=float(s["momentum"]), weight_decay=wd)
    raise ValueError(s["optimizer"])


def make_scheduler(s, opt):
    """Linear warm-up lr (s+1)/W over W steps, then constant, halved every decay_every steps, cosine or linear to 0."""
    warmup, steps = int(s["warmup"]), int(s["steps"])
    lrs = torch.optim.lr_scheduler
    if s["schedule"] == "constant":
        main = lrs.ConstantLR(opt, factor=1.0, total_iters=0)
    elif s["schedule"] == "step":
        main = lrs.StepLR(opt, step_size=int(s["decay_every"]), gamma=0.5)
    elif s["schedule"] == "cosine":
        main = lrs.CosineAnnealingLR(opt, T_max=steps - warmup, eta_min=0.0)
    elif s["schedule"] == "linear":
        main = lrs.LinearLR(opt, start_factor=1.0, end_factor=0.0, total_iters=steps - warmup)
    else:
        raise ValueError(s["schedule"])
    if warmup == 0:
        return main
    warm = lrs.LinearLR(opt, start_factor=1.0 / warmup, end_factor=1.0, total_iters=warmup - 1)
    return lrs.SequentialLR(opt, [warm, main], milestones=[warmup])


def replay(run, s):
    """Replays `run` with settings `s`; returns (worst relative error per step, steps with clipping active)."""
    d, n, layers, heads = (int(s[k]) for k in ("d", "n", "layers", "heads"))
    assert s["param"] == "full" and s["attention"] == "linear" and s["tie"] == "false", s
    assert float(s["act_clip"]) == 0.0, s
    c = 1.0 / n if s["norm"] == "1/n" else 1.0
    theta0 = torch.tensor(run["theta0"])
    params, P, Q = [], [[None] * heads for _ in range(layers)], [[None] * heads for _ in range(layers)]
    for v in run["views"]:
        w = theta0[v["offset"]:v["offset"] + v["rows"] * v["cols"]].reshape(v["rows"], v["cols"]).clone()
        w.requires_grad_(True)
        params.append(w)
        (P if v["name"] == "P" else Q)[v["layer"]][v["head"]] = w
    opt = make_optimizer(s, params)
    sched = make_scheduler(s, opt)
    clip = float(s["clip"])
    errors, clipped = [], 0
    for step, rec in enumerate(run["steps"]):
        X, y = torch.tensor(rec["X"]), torch.tensor(rec["y"])
        Z0 = torch.cat([X, y.unsqueeze(1)], dim=1)
        Z0[:, d, n] = 0.0
        opt.zero_grad()
        loss = ((forward(P, Q, Z0, d, n, layers, heads, c) - y[:, n]) ** 2).mean()
        loss.backward()
        lr = opt.param_groups[0]["lr"]
        if clip > 0 and s["clip_mode"] == "global":
            norms = [torch.nn.utils.clip_grad_norm_(params, clip).item()]
        elif clip > 0:
            norms = [torch.nn.utils.clip_grad_norm_([w], clip).item() for w in params]
        else:
            norms = []
        clipped += any(x > clip for x in norms)
        opt.step()
        sched.step()
        theta = torch.cat([w.detach().reshape(-1) for w in params])
        err = max(abs(loss.item() - rec["loss"]) / abs(rec["loss"]), abs(lr - rec["lr"]) / rec["lr"],
                  worst_rel(theta, rec["theta"]))
        errors.append(err)
        print(f"    step {step}: loss {rec['loss']:.6g} lr {rec['lr']:.6g} grad norm(s) max "
              f"{max(norms, default=0):.4g} worst rel. error {err:.2e}")
    return errors, clipped


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    failures = 0
    for name, settings in CONFIGS.items():
        run = dump(sys.argv[1], settings)
        s = run["settings"]
        print(f"{name}: {' '.join(settings)}")
        errors, clipped = replay(run, s)
        steps = len(run["steps"])
        print(f"  worst rel. error {max(errors):.2e}, clipping active at {clipped} of {steps} steps")
        if max(errors) > TOL:
            print(f"FAIL: {name}: torch and the engine differ by {max(errors):.2e} > {TOL:g}")
            failures += 1
        if clipped < steps // 2:
            print(f"FAIL: {name}: clipping active at only {clipped} of {steps} steps")
            failures += 1
        for option, value in (("beta2", float(s["beta2"]) * (1 + 1e-3)), ("clip", float(s["clip"]) * 1.01)):
            if option == "beta2" and s["optimizer"] == "sgd":
                continue
            print(f"  perturbed {option} = {value!r} (must differ):")
            worst = max(replay(run, dict(s, **{option: repr(value)}))[0])
            if worst <= TOL:
                print(f"FAIL: {name}: perturbing {option} went unnoticed (worst rel. error {worst:.2e})")
                failures += 1
    print("torch_trajectory: " + ("ok" if failures == 0 else f"{failures} failure(s)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
