#!/usr/bin/python3
"""PyTorch (CPU, single thread, float32) performance peer of bench_train configs 3 and 4: [VO23]'s transformer.

One step = sample a fresh task batch + forward + backward + global-norm clip + AdamW update, the loop
bench_train times.  The model is tests/torch_transformer.py's (the one PyTorch definition, checked
against the engine step by step by the torch_transformer_trajectory test), run in float32.

Data (per task): w ~ N(0, I_d); x_1..x_{n+1} ~ U(-0.5, 0.5)^d; y_i = <w, x_i>; tokens as in the test
(constructed: (x_i, y_i), query (x_q, 0); classic: x_1, (0, y_1), ..., x_q).  Loss: mean (yhat - y_q)^2.
Optimiser: clip_grad_norm_(10), AdamW(lr, betas (0.9, 0.98), eps 1e-8, weight decay 0).

Configs (bench/bench_train.cpp, /work/notes/vo23_protocol.md section 2):
  fig5: classic tokens, d = n = 10, 2 layers, 1 head, softmax then linear, PE 10 concatenated (width 20),
        no biases, lr 1e-3
  fig8: constructed tokens, d = n = 10, 12 layers, 4 heads, key_size 11, MLP (widening 4), no LN,
        activation clip 10, no biases, lr 5e-4
Usage:
  /usr/bin/python3 bench/torch_transformer_peer.py --config fig5 [--batch 2048] [--seconds 15 | --steps N]
Benchmark output (stdout, one line):
  torch_steps_per_s <v> config=<c> batch=<B> steps=<N> ... final_loss=<v>
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blas_probe import loaded_blas  # noqa: E402

# Single thread everywhere, set before torch (and its BLAS / OpenMP) are loaded.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from torch_transformer import Params, Shape, forward, make_tokens, torch  # noqa: E402

# The option settings of bench_train's configs, as trajectory_dump prints them (Shape reads these).
BASE = {"d": "10", "n": "10", "embed": "none", "embed_size": "0", "pe": "none", "pe_size": "0", "key_size": "0",
        "tie": "false", "attention_first": "same", "mlp": "false", "widening": "4", "layer_norm": "false",
        "bias": "false", "act_clip": "0", "heads": "1", "layer_norm_first": "false", "embed_bias": "true",
        "causal": "false", "prefix_loss": "false", "readout": "channel"}
CONFIGS = {
    "fig5": dict(BASE, tokens="classic", layers="2", attention="linear", attention_first="softmax", pe="concat",
                 pe_size="10", lr="1e-3", init_scale="0.02"),
    "fig8": dict(BASE, tokens="constructed", layers="12", heads="4", key_size="11", attention="linear", mlp="true",
                 act_clip="10", lr="5e-4", init_scale="0.002"),
}


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("--config", choices=sorted(CONFIGS), required=True)
    a.add_argument("--batch", type=int, default=2048)
    a.add_argument("--steps", type=int, default=0, help="timed steps; 0 = run for --seconds")
    a.add_argument("--seconds", type=float, default=15.0)
    a.add_argument("--warmup", type=int, default=3)
    a.add_argument("--seed", type=int, default=0)
    args = a.parse_args()

    torch.set_default_dtype(torch.float32)   # torch_trajectory (imported by the model) sets float64
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    s = CONFIGS[args.config]
    shape = Shape(s)
    g = torch.Generator().manual_seed(args.seed + 1)
    B, d, n = args.batch, shape.d, shape.n

    def sample():
        X = torch.rand(B, d, n + 1, generator=g) - 0.5
        w = torch.randn(B, d, generator=g)
        y = torch.einsum("bd,bdt->bt", w, X)
        return make_tokens(X, y, shape), y[:, n]

    p = Params(dtype=torch.float32, init_scale=float(s["init_scale"]) / shape.layers, seed=args.seed)
    with torch.no_grad():
        forward(shape, p, sample()[0][:1])   # creates the parameters
    opt = torch.optim.AdamW(p.tensors, lr=float(s["lr"]), betas=(0.9, 0.98), eps=1e-8, weight_decay=0.0)

    def step():
        h, yq = sample()
        opt.zero_grad(set_to_none=True)
        loss = ((forward(shape, p, h)[:, -1] - yq) ** 2).mean()   # the prediction at the query token
        loss.backward()
        torch.nn.utils.clip_grad_norm_(p.tensors, 10.0)
        opt.step()
        return loss.detach()

    first = step().item()
    for _ in range(args.warmup - 1):
        step()
    losses = []
    t0 = time.perf_counter()
    while (args.steps > 0 and len(losses) < args.steps) or (args.steps == 0 and time.perf_counter() - t0 < args.seconds):
        losses.append(step())
    dt = time.perf_counter() - t0
    print("torch_steps_per_s %.3f config=%s batch=%d steps=%d warmup=%d seconds=%.2f params=%d threads=%d blas=%s "
          "torch=%s initial_loss=%.5f final_loss=%.5f"
          % (len(losses) / dt, args.config, B, len(losses), args.warmup, dt, sum(w.numel() for w in p.tensors),
             torch.get_num_threads(), loaded_blas(), torch.__version__, first, losses[-1].item()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
