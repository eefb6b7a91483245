"""[VO23]'s transformer: the engine's training trajectory against PyTorch float64, step by step.

Usage: torch_transformer.py TRAJECTORY_DUMP                 the configurations below (the ctest)
       torch_transformer.py TRAJECTORY_DUMP NAME=VALUE...   one configuration of your own, no controls

For each configuration, trajectory_dump trains the point (arch = transformer) with the engine's own loop
in float64 and prints the initial parameters, its named views, the batch of every step and the loss,
rate and parameters after every step.  This script replays the run from the same initial parameters
and batches with an independent model written from [VO23]'s code (google-research/self-organising-systems,
transformers_learn_icl_by_gd/src/transformer.py and src/attn.py; tokens as rows, as there):

  tokens    constructed: e_i = (x_i, y_i), query (x_q, 0)      (data.py:create_reg_data)
            classic: x_1, (0,..,0, y_1), ..., x_n, (0,..,0, y_n), x_q  (data.py:create_reg_data_classic_token)
  embed     h = x W_e (+ b_e iff use_bias_p)             hk.Linear(embedding_size, with_bias=use_bias_p)
            mlp:  h = h + gelu(h W1 + b1) W2 + b2           MLP(..., use_bias_p=True), input_mlp
  pe        create_pos_encoding(T, pe_size), added or concatenated after the features
  layer l   tied (deq): every layer;  else: no LN before layer 0, a fresh LN before the others
            h_norm = LN(h) (haiku LayerNorm: eps 1e-5, scale, offset)
            q = h_norm W_q + b_q;  k, v from h_norm[:, :-1] (include_query = False)
            logits[h, t, T] = q_th . k_Th;  weights = logits | softmax(logits / sqrt(key_size)) |
                              s softmax(..) + (1 - s) logits,  s = sigmoid(10 y)   (non_lin_mix)
            h = h + (weights v, heads concatenated) W_o + b_o;  jnp.clip(h, -clip, clip) if clip > 0
            mlp: h = h + gelu(LN(h) W1 + b1) W2 + b2 (LN iff use_layer_norm), gelu = jax.nn.gelu (tanh)
  readout   yhat = -h[:, -1, -1] after the last layer
and the GPT-2 model of Raventos et al. (mansheej/icl-task-diversity: icl/gpt2.py, icl/models.py, icl/utils.py)
as the options causal, readout = head, pe = learnt, tokens = padded, prefix_loss:
  tokens    padded: to_seq: (0, x_i) and (y_i, 0, .., 0) interleaved (the query's label token left out: the
            causal mask hides it from every prediction)
  embed     Dense(n_embd, use_bias=False) (embed_bias = false);  h = h + wpe[:T] (pe = learnt)
  layer l   x + attn(ln_1(x)), every layer (layer_norm_first);  att = q k^T / sqrt(hs), jnp.where(tril, att,
            finfo.min), softmax: every token attends to tokens 0..t (causal)
  readout   preds = Dense(1, use_bias=False)(ln_f(h)) at tokens 0, 2, .., 2n (seq_to_targets)
  loss      jnp.square(preds - targets).mean() over the tasks and all n+1 positions (prefix_loss)
The options map onto the code's flags as transformer.hpp says (attention_first = layer 0's attention
unless tied).  The loss is the engine's plain MSE (the code's is 1/2 MSE).  Gradients come from
torch.autograd; the optimisers, clipping and schedules from torch_trajectory.py (torch.optim).

Per step, the loss and the rate must agree to TOL (relative), and theta after the step and the step's
update theta_{s+1} - theta_s to TOL relative per entry with a floor of 1e-3 x the largest entry; every
engine view must be a parameter the model uses, of the shape it uses, and vice versa.  Two things are
left out of the comparison because they are conventions, not maths: the key bias of a softmax layer
(the loss does not depend on it; its gradient must vanish, and Adam turns its rounding noise into an
arbitrary trajectory), and activations exactly at +-act_clip (jnp.clip gives them half the gradient,
the engine none): a configuration must produce none.  Then, to show that the comparison can
fail, each configuration is replayed with one detail of the model changed (GELU erf instead of tanh,
LayerNorm eps, no 1/sqrt(key) in the softmax, mix gain, y slot of a classic token, flipped encodings,
keys including the query): each must break the agreement.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_trajectory import dump, make_optimizer, make_scheduler, torch, worst_rel  # noqa: E402

TOL = 1e-9

COMMON = ["arch=transformer", "norm=1", "param=full", "d=3", "n=5", "batch=37", "steps=10", "precision=float64",
          "diverge_factor=0", "init=vs_truncated"]
CONFIGS = {
    # classic tokens, softmax in layer 0 (first_layer_sm), MLP, LayerNorm, input embedding + MLP,
    # concatenated encodings, 2 untied layers of 2 heads, AdamW with global clipping, warm-up + cosine.
    "classic_softmax_mlp_ln_embed_pe": COMMON + [
        "tokens=classic", "layers=2", "heads=2", "attention=linear", "attention_first=softmax", "mlp=true",
        "widening=2", "layer_norm=true", "embed=mlp", "embed_size=6", "pe=concat", "pe_size=4", "bias=true",
        "init_scale=4", "optimizer=adamw", "lr=0.01", "beta2=0.98", "weight_decay=0.1", "clip=1",
        "clip_mode=global", "schedule=cosine", "warmup=2", "seed=11"],
    # constructed tokens, mix attention in every layer of a tied (recurrent) 3-layer model, LayerNorm
    # before each block, MLP, activation clip, encodings added, no biases, key_size != width, SGD.
    "constructed_mix_tied_clip_pe_add": COMMON + [
        "tokens=constructed", "layers=3", "tie=true", "heads=2", "key_size=3", "attention=mix", "mlp=true",
        "widening=2", "layer_norm=true", "pe=add", "pe_size=4", "bias=false", "act_clip=3", "init_scale=2",
        "optimizer=sgd", "lr=0.02", "momentum=0.9", "weight_decay=0.01", "clip=2", "clip_mode=global",
        "seed=20"],
    # constructed tokens, linear embedding, encodings added, mix in layer 0 only (the code's untied
    # use_non_lin_mix), softmax after, activation clip, Adam with per-view clipping.
    # Raventos et al.'s GPT-2 (icl/gpt2.py): padded tokens, embedding without bias, a learnt positional
    # table, causal softmax attention with LayerNorm before every block, MLP, ln_f and a linear read-out,
    # the loss at every x token; nanoGPT's init; Adam with warm-up.
    "gpt2_padded_causal_prefix": COMMON[:-1] + [
        "tokens=padded", "layers=2", "heads=2", "key_size=3", "attention=softmax", "embed=linear", "embed_size=6",
        "embed_bias=false", "pe=learnt", "pe_size=6", "causal=true", "layer_norm=true", "layer_norm_first=true",
        "mlp=true", "widening=2", "readout=head", "prefix_loss=true", "init=gpt2", "init_scale=0.5",
        "optimizer=adam", "lr=0.01", "schedule=linear", "warmup=3", "seed=12"],
    "constructed_embed_mixfirst_softmax": COMMON + [
        "tokens=constructed", "layers=2", "heads=1", "attention=softmax", "attention_first=mix", "embed=linear",
        "embed_size=6", "pe=add", "pe_size=6", "bias=true", "act_clip=2.5", "init_scale=2",
        "optimizer=adam", "lr=0.01", "weight_decay=0.01", "clip=0.5", "clip_mode=matrix", "seed=10"],
}


class Shape:
    """The model's hyper-parameters, from the dumped settings (the options of transformer_options)."""

    def __init__(self, s):
        self.d, self.n = int(s["d"]), int(s["n"])
        self.tokens = s["tokens"]
        self.classic = self.tokens == "classic"
        self.T = self.n + 1 if self.tokens == "constructed" else 2 * self.n + 1
        self.d_tok = self.d if self.classic else self.d + 1
        self.embed = s["embed"]
        self.pe = s["pe"]
        self.pe_size = int(s["pe_size"])
        self.E_emb = self.d_tok if self.embed == "none" else int(s["embed_size"])
        self.E = self.E_emb + (self.pe_size if self.pe == "concat" else 0)
        self.widening = int(s["widening"])
        self.layers, self.heads = int(s["layers"]), int(s["heads"])
        self.key = int(s["key_size"]) or self.E
        self.tie = s["tie"] == "true"
        self.attention = s["attention"]
        self.attention_first = s["attention"] if s["attention_first"] == "same" else s["attention_first"]
        self.mlp, self.layer_norm, self.bias = (s[k] == "true" for k in ("mlp", "layer_norm", "bias"))
        self.ln_first, self.embed_bias = s["layer_norm_first"] == "true", s["embed_bias"] == "true"
        self.causal, self.prefix_loss = s["causal"] == "true", s["prefix_loss"] == "true"
        self.head = s["readout"] == "head"
        self.act_clip = float(s["act_clip"])
        # Details of the definition, changed by the negative controls only.
        self.gelu = "tanh"             # jax.nn.gelu(approximate=True)
        self.ln_eps = 1e-5             # hk.LayerNorm's default
        self.softmax_scale = 1.0 / math.sqrt(self.key)
        self.mix_gain = 10.0           # sigmoid(y * 10)
        self.include_query = False
        self.y_slot = self.d - 1       # classic: y sits in the last coordinate of its token
        self.padded_y_slot = 0         # padded: in the first (to_seq)
        self.pe_flip = False           # create_pos_encoding(..., flip=False)
        self.mask_diagonal = False     # the causal mask (jnp.tril) keeps the diagonal: a token sees itself
        self.ln_f = True               # the head reads ln_f(h)

    def attention_at(self, l):
        return self.attention if self.tie or l > 0 else self.attention_first


def make_tokens(X, y, shape):
    """The token sequence, B x T x d_tok, from a dumped batch (X: B x d x (n+1), y: B x (n+1))."""
    B, d, n = X.shape[0], shape.d, shape.n
    if shape.tokens == "padded":                       # utils.py:to_seq, without the query's label token
        h = torch.zeros(B, shape.T, d + 1, dtype=X.dtype)
        h[:, 0::2, 1:] = X.transpose(1, 2)
        h[:, 1::2, shape.padded_y_slot] = y[:, :n]
        return h
    if shape.classic:
        h = torch.zeros(B, shape.T, d, dtype=X.dtype)
        h[:, 0::2, :] = X.transpose(1, 2)              # x_1, .., x_n, x_q at tokens 0, 2, .., 2n
        h[:, 1:-1:2, shape.y_slot] = y[:, :n]          # (0, .., 0, y_i) at tokens 1, 3, .., 2n-1
        return h
    Z = torch.cat([X, y.unsqueeze(1)], dim=1)           # (d+1) x (n+1)
    Z[:, d, n] = 0.0                                    # the query's label is hidden
    return Z.transpose(1, 2)


def pos_encoding(T, size, dtype, flip=False):
    """attn.py:create_pos_encoding(T, size, flip): pe[t, 2i] = sin(t w_i), pe[t, 2i+1] = cos(t w_i)."""
    pe = torch.zeros(T, size, dtype=torch.float64)
    position = torch.arange(T, dtype=torch.float64)[:, None]
    div_term = torch.exp(torch.arange(0, size, 2, dtype=torch.float64) * (-math.log(10000.0) / size))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return (pe.flip(0) if flip else pe).to(dtype)


def layer_norm(x, g, b, eps):
    """hk.LayerNorm(axis=-1, create_scale=True, create_offset=True)."""
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return g * (x - mean) * torch.rsqrt(var + eps) + b


class Params:
    """The model's parameters, requested by name, layer and shape (W: in x out, as hk.Linear stores it).

    Params(views, theta): the flat theta cut into leaf tensors by the dumped views; a request for a view
    the engine lacks, or of another shape, is a KeyError.  Params(init_scale=s, dtype=...): the tensors
    are created at their first request (bench/torch_transformer_peer.py): weights ~ N(0, s / fan_in), the
    mix scalar 0, LayerNorm scales 1, biases and offsets 0."""

    def __init__(self, views=None, theta=None, dtype=None, init_scale=None, seed=0):
        self.dtype = dtype or torch.get_default_dtype()
        self.tensors, self.by_name, self.used = [], {}, set()
        self.init_scale = init_scale
        self.generator = torch.Generator().manual_seed(seed)
        if views is None:
            return
        theta = torch.as_tensor(theta, dtype=self.dtype)
        for v in views:
            w = theta[v["offset"]:v["offset"] + v["rows"] * v["cols"]].reshape(v["rows"], v["cols"]).clone()
            self._add(v["name"], v["layer"], w)

    def _add(self, name, layer, w):
        w.requires_grad_(True)
        self.tensors.append(w)
        self.by_name[(name, layer)] = w

    def _create(self, name, layer, rows, cols):
        if name.endswith(".g"):
            w = torch.ones(rows, cols, dtype=self.dtype)
        elif name.split(".")[-1].startswith("b") or name == "attn.mix":
            w = torch.zeros(rows, cols, dtype=self.dtype)
        else:
            w = torch.randn(rows, cols, generator=self.generator, dtype=self.dtype) * math.sqrt(self.init_scale / rows)
        self._add(name, layer, w)

    def __call__(self, name, layer, rows, cols):
        if (name, layer) not in self.by_name:
            if self.init_scale is None:
                raise KeyError(f"the model needs parameter {name} (layer {layer}) but the engine has no such view")
            self._create(name, layer, rows, cols)
        w = self.by_name[(name, layer)]
        if tuple(w.shape) != (rows, cols):
            raise KeyError(f"the model needs {name} (layer {layer}) as {rows} x {cols}, the engine's view is "
                           f"{w.shape[0]} x {w.shape[1]}")
        self.used.add((name, layer))
        return w

    def unused(self):
        return sorted(set(self.by_name) - self.used)

    def flat(self):
        return torch.cat([w.detach().reshape(-1) for w in self.tensors])


def forward(shape, p, h, stats=None):
    """The last layer's predictions B x T at every token; p: Params; h: tokens B x T x d_tok.  stats counts
    clipped activations."""
    gelu = lambda u: torch.nn.functional.gelu(u, approximate=shape.gelu)  # noqa: E731

    def linear(x, W, b, layer, out):
        """hk.Linear(out, with_bias=b is not None)(x), its weight named W, its bias b."""
        y = x @ p(W, layer, x.shape[-1], out)
        return y + p(b, layer, 1, out) if b is not None else y

    def clip(x):
        """jnp.clip(x, -a, a) = minimum(maximum(x, -a), a).  torch.maximum / minimum, like lax.max / min,
        pass half the gradient to each side of a tie, so an entry exactly at +-a gets half its gradient
        (torch.clamp would pass all of it)."""
        if shape.act_clip <= 0:
            return x
        a = torch.tensor(shape.act_clip, dtype=x.dtype)
        if stats is not None:
            stats["clipped"] = stats.get("clipped", 0) + int((x.detach().abs() > a).sum())
            stats["ties"] = stats.get("ties", 0) + int((x.detach().abs() == a).sum())
        return torch.minimum(torch.maximum(x, -a), a)

    def norm(x, name, layer):
        E = x.shape[-1]
        return layer_norm(x, p(name + ".g", layer, 1, E), p(name + ".b", layer, 1, E), shape.ln_eps)

    B, T = h.shape[0], h.shape[1]
    if shape.embed != "none":
        h = linear(h, "emb.W", "emb.b" if shape.bias and shape.embed_bias else None, 0, shape.E_emb)
    if shape.embed == "mlp":   # MLP(widening, use_bias_p=True): always with biases
        u = gelu(linear(h, "emb_mlp.W1", "emb_mlp.b1", 0, shape.widening * shape.E_emb))
        h = h + linear(u, "emb_mlp.W2", "emb_mlp.b2", 0, shape.E_emb)
    if shape.pe == "add":
        h = h + pos_encoding(T, shape.pe_size, h.dtype, shape.pe_flip)
    elif shape.pe == "learnt":   # nn.Embed(block_size, n_embd)(arange(T))
        wpe = p("pe.W", 0, T, shape.E_emb)
        h = h + (wpe.flip(0) if shape.pe_flip else wpe)
    elif shape.pe == "concat":
        pe = pos_encoding(T, shape.pe_size, h.dtype, shape.pe_flip)
        h = torch.cat([h, pe.expand(B, T, shape.pe_size)], dim=-1)
    E, H, k = h.shape[-1], shape.heads, shape.key
    bias = (lambda name: name) if shape.bias else (lambda name: None)  # noqa: E731
    for l in range(shape.layers):
        lw = 0 if shape.tie else l
        h_norm = norm(h, "ln1", lw) if shape.layer_norm and (shape.tie or l > 0 or shape.ln_first) else h
        kv = h_norm if shape.include_query or shape.causal else h_norm[:, :-1, :]
        q = linear(h_norm, "attn.Wq", bias("attn.bq"), lw, H * k).reshape(B, T, H, k)
        key = linear(kv, "attn.Wk", bias("attn.bk"), lw, H * k).reshape(B, kv.shape[1], H, k)
        value = linear(kv, "attn.Wv", bias("attn.bv"), lw, H * k).reshape(B, kv.shape[1], H, k)
        logits = torch.einsum("bthd,bThd->bhtT", q, key)
        kind = shape.attention_at(l)
        keep = torch.ones(T, T, dtype=torch.bool).tril(-1 if shape.mask_diagonal else 0) if shape.causal else None
        if kind == "linear":
            weights = logits if keep is None else logits.masked_fill(~keep, 0.0)
        else:
            z = logits * shape.softmax_scale
            sm = torch.softmax(z if keep is None else z.masked_fill(~keep, torch.finfo(z.dtype).min), dim=-1)
            if kind == "softmax":
                weights = sm
            else:
                s = torch.sigmoid(p("attn.mix", lw, 1, 1).reshape(()) * shape.mix_gain)
                weights = s * sm + (1 - s) * (logits if keep is None else logits.masked_fill(~keep, 0.0))
        attn = torch.einsum("bhtT,bThd->bthd", weights, value).reshape(B, T, H * k)
        h = clip(h + linear(attn, "attn.Wo", bias("attn.bo"), lw, E))
        if shape.mlp:
            x2 = norm(h, "ln2", lw) if shape.layer_norm else h
            u = gelu(linear(x2, "mlp.W1", bias("mlp.b1"), lw, shape.widening * E))
            h = clip(h + linear(u, "mlp.W2", bias("mlp.b2"), lw, E))
    if not shape.head:
        return -h[:, :, -1]
    return linear(norm(h, "lnf", 0) if shape.ln_f else h, "head.W", None, 0, 1)[:, :, 0]


def loss_of(shape, yhat, y):
    """The engine's plain MSE at the query, or (prefix_loss) over the x tokens 0, 2, .., 2n and their labels."""
    if not shape.prefix_loss:
        return ((yhat[:, -1] - y[:, shape.n]) ** 2).mean()
    return ((yhat[:, 0::2] - y) ** 2).mean()


def invariant_views(run, shape):
    """The views the loss does not depend on: a softmax layer's key bias (softmax_T(q_t . (k_T + b)) =
    softmax_T(q_t . k_T): q_t . b is the same for every key), so dL/db_k = 0 exactly.  Their gradient is
    rounding noise, which Adam divides by sqrt(v) + eps; their trajectories are not comparable."""
    return [v for v in run["views"] if v["name"] == "attn.bk" and shape.attention_at(v["layer"]) == "softmax"]


def replay(run, shape, s, verbose=True):
    """Replays `run`; returns (worst error per step, steps with clipping active, activation clip statistics)."""
    p = Params(run["views"], run["theta0"])
    compared = torch.ones(len(run["theta0"]), dtype=torch.bool)
    invariant = invariant_views(run, shape)
    for v in invariant:
        compared[v["offset"]:v["offset"] + v["rows"] * v["cols"]] = False
    n = shape.n
    opt = make_optimizer(s, p.tensors)
    sched = make_scheduler(s, opt)
    clip = float(s["clip"])
    errors, clipped, stats = [], 0, {}
    torch_prev, engine_prev = p.flat()[compared], torch.tensor(run["theta0"])[compared]
    for step, rec in enumerate(run["steps"]):
        X, y = torch.tensor(rec["X"]), torch.tensor(rec["y"])
        opt.zero_grad()
        loss = loss_of(shape, forward(shape, p, make_tokens(X, y, shape), stats), y)
        loss.backward()
        grad = torch.cat([(w.grad if w.grad is not None else torch.zeros_like(w)).reshape(-1) for w in p.tensors])
        if invariant and grad[~compared].abs().max().item() > 1e-12 * grad.abs().max().item():
            raise KeyError(f"the gradient of {[v['name'] for v in invariant]} should vanish, it is "
                           f"{grad[~compared].abs().max().item():.3g}")
        if step == 0 and p.unused():
            raise KeyError(f"the engine has views the model does not use: {p.unused()}")
        lr = opt.param_groups[0]["lr"]
        if clip > 0 and s["clip_mode"] == "global":
            norms = [torch.nn.utils.clip_grad_norm_(p.tensors, clip).item()]
        elif clip > 0:
            norms = [torch.nn.utils.clip_grad_norm_([w], clip).item() for w in p.tensors]
        else:
            norms = []
        clipped += any(x > clip for x in norms)
        opt.step()
        sched.step()
        theta, engine = p.flat()[compared], torch.tensor(rec["theta"])[compared]
        e_loss = abs(loss.item() - rec["loss"]) / abs(rec["loss"])
        e_lr = abs(lr - rec["lr"]) / rec["lr"]
        e_theta = worst_rel(theta, engine)
        e_update = worst_rel(theta - torch_prev, engine - engine_prev)
        torch_prev, engine_prev = theta, engine
        errors.append(max(e_loss, e_lr, e_theta, e_update))
        if verbose:
            print(f"    step {step}: loss {rec['loss']:.6g} lr {rec['lr']:.4g} grad norm(s) max {max(norms, default=0):.4g}"
                  f"  rel. errors: loss {e_loss:.1e} theta {e_theta:.1e} update {e_update:.1e}")
    return errors, clipped, stats


def controls(shape):
    """One changed detail of the model per control, where the configuration exercises it."""
    out = []
    if shape.mlp or shape.embed == "mlp":
        out.append(("GELU erf instead of tanh", {"gelu": "none"}))
    if shape.layer_norm:
        out.append(("LayerNorm eps 1e-3", {"ln_eps": 1e-3}))
    kinds = {shape.attention_at(l) for l in range(shape.layers)}
    if kinds & {"softmax", "mix"}:
        out.append(("softmax without 1/sqrt(key_size)", {"softmax_scale": 1.0}))
    if "mix" in kinds:
        out.append(("mix gain 9 instead of 10", {"mix_gain": 9.0}))
    if shape.classic:
        out.append(("classic y token (y, 0, .., 0)", {"y_slot": 0}))
    if shape.tokens == "padded":
        out.append(("padded y token (0, .., 0, y)", {"padded_y_slot": shape.d}))
    if shape.pe != "none":
        out.append(("positional encodings flipped", {"pe_flip": True}))
    if shape.causal:
        out.append(("not causal: every token sees every token", {"causal": False, "include_query": True}))
        out.append(("a token does not see itself", {"mask_diagonal": True}))
    else:
        out.append(("keys and values include the query", {"include_query": True}))
    if shape.head:
        out.append(("read-out without ln_f", {"ln_f": False}))
    if shape.prefix_loss:
        out.append(("the loss at the query only", {"prefix_loss": False}))
    if shape.ln_first:
        out.append(("no LayerNorm before layer 1", {"ln_first": False}))
    return out


def check(name, settings, binary, with_controls):
    run = dump(binary, settings)
    s = run["settings"]
    shape = Shape(s)
    print(f"{name}: {' '.join(settings)}")
    print(f"  {len(run['views'])} views, {len(run['theta0'])} parameters, width {shape.E}, {shape.T} tokens")
    for v in invariant_views(run, shape):
        print(f"  not compared: {v['name']} of layer {v['layer']} (softmax: the loss does not depend on it)")
    failures = 0
    try:
        errors, clipped, act = replay(run, shape, s)
    except KeyError as e:
        print(f"FAIL: {name}: views and model disagree: {e}")
        return 1
    steps = len(run["steps"])
    print(f"  worst rel. error {max(errors):.2e}; gradient clipping active at {clipped} of {steps} steps; "
          f"{act.get('clipped', 0)} activations clipped, {act.get('ties', 0)} exactly at the bound")
    if max(errors) > TOL:
        print(f"FAIL: {name}: torch and the engine differ by {max(errors):.2e} > {TOL:g} "
              f"(first at step {next(i for i, e in enumerate(errors) if e > TOL)})")
        failures += 1
    if not with_controls:
        return failures
    if float(s["clip"]) > 0 and clipped < steps // 2:
        print(f"FAIL: {name}: gradient clipping active at only {clipped} of {steps} steps")
        failures += 1
    if shape.act_clip > 0 and act.get("clipped", 0) == 0:
        print(f"FAIL: {name}: act_clip = {shape.act_clip} never clipped an activation")
        failures += 1
    if act.get("ties", 0) > 0:   # the engine's clip passes no gradient there, jnp.clip half of it
        print(f"FAIL: {name}: {act['ties']} activations exactly at +-act_clip (the gradient there is a "
              "convention); choose another configuration")
        failures += 1
    mix = [w for (v, w) in zip(run["views"], Params(run["views"], run["theta0"]).tensors) if v["name"] == "attn.mix"]
    for w in mix:   # the mix must sit where both terms and its gradient matter
        sig = torch.sigmoid(10 * w).item()
        if not 0.05 < sig < 0.95:
            print(f"FAIL: {name}: initial mix s = {sig:.3f} is saturated; choose another seed")
            failures += 1
    for what, change in controls(shape):
        bad = Shape(s)
        bad.__dict__.update(change)
        try:
            worst = max(replay(run, bad, s, verbose=False)[0])
            print(f"  control: {what}: worst rel. error {worst:.2e} (must exceed {TOL:g})")
        except KeyError as e:   # the changed model leaves a view unused: noticed
            worst = math.inf
            print(f"  control: {what}: views and model disagree ({e})")
        if worst <= TOL:
            print(f"FAIL: {name}: the control '{what}' went unnoticed")
            failures += 1
    return failures


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if len(sys.argv) > 2:
        failures = check("command line", sys.argv[2:], sys.argv[1], with_controls=False)
    else:
        failures = sum(check(name, settings, sys.argv[1], with_controls=True) for name, settings in CONFIGS.items())
    print("torch_transformer: " + ("ok" if failures == 0 else f"{failures} failure(s)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
