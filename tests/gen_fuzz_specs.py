#!/usr/bin/env python3
"""Deterministic hostile sweep specs for tests/test_fuzz_specs.sh.

  gen_fuzz_specs.py PRESET_DIR OUT_DIR COUNT

Writes COUNT mutations of the presets (jobs/presets/**/*.ini) to OUT_DIR/case-NNN.ini, plus special
inputs (a directory, a FIFO, an empty file, a file of NUL bytes, a file over 1 MiB, a symlink to a
directory, a missing file), and prints every path to try, one per line; /dev/zero and /dev/null too.
Mutations: hostile values (empty, huge, negative, NaN, inf, overflowing integers, broken lists) on
random keys, unknown keys and sections, empty / duplicate / unequal / self zips, list explosions past
the point limit, memory blow-ups, bad sweep keys, binary junk, CRLF, truncation, dropped and doubled
lines.  The seed is fixed: the same cases every run.
"""
import os
import pathlib
import random
import sys

OPTIONS = ["d", "n", "layers", "heads", "param", "tie", "attention", "norm", "act_clip", "x_dist", "cov", "w_prior",
           "noise", "optimizer", "lr", "beta1", "beta2", "eps", "momentum", "weight_decay", "clip", "clip_mode",
           "schedule", "warmup", "decay_every", "steps", "batch", "refresh", "init", "init_scale", "eval_tasks",
           "eval_every", "diverge_factor", "seed", "precision", "analysis", "ridge_lambda", "landscape"]
SWEEP_KEYS = ["zip", "repeats", "sweep_seed", "seeds", "max_point_memory"]
VALUES = ["", "0", "-0", "-1", "1e308", "1e400", "-1e400", "nan", "NaN", "inf", "-inf", "9223372036854775807",
          "9223372036854775808", "18446744073709551617", "4294967297", "2147483648", "-2147483649", "0x10", "1e19",
          "1.5", "1,2,3", ",", ":", "diag:", "set:", "uniform:", "fixed:", "gamma:0", "gamma:1e-300", "uniform:1e308",
          "rotated:1,2", "set:" + "1," * 500 + "1", "diag:" + ",".join(["1"] * 127), "off", "true", "false", "1/n",
          "identity", "\t", "\u00e9", "\\", '"quoted"', "1 2 3", "0,-1", "0,1e19", "replica", "point", "4G", "1e-3",
          "16EiB", "-4G"]
BLOWUPS = [("eval_tasks", "10000000"), ("n", "100000"), ("layers", "1000"), ("heads", "64"), ("d", "127"),
           ("batch", "10000000"), ("steps", "1099511627776"), ("attention", "softmax")]


def load_presets(root):
    return [p.read_text().splitlines() for p in sorted(pathlib.Path(root).rglob("*.ini"))]


def key_of(line):
    return line.split("=", 1)[0].strip() if "=" in line and not line.lstrip().startswith("#") else None


def mutate(lines, rng):
    lines = list(lines)
    keys = [k for k in map(key_of, lines) if k]
    op = rng.randrange(14)
    if op == 0 and lines:    # a hostile value on a line of the preset
        i = rng.randrange(len(lines))
        k = key_of(lines[i]) or rng.choice(OPTIONS)
        lines[i] = f"{k} = {rng.choice(VALUES)}"
    elif op == 1:            # a hostile value on any key
        lines.append(f"{rng.choice(OPTIONS + SWEEP_KEYS)} = {rng.choice(VALUES)}")
    elif op == 2:            # unknown keys, sections, lines without a key or '='
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(
            ["colour = red", "[section]", "[train]\nlayers = 2", "noequals", "= 5", "layers.x = 1", "==", "layers == 2",
             " = ", "#only a comment", "layers = 1 # trailing", "Layers = 2", "layers\t=\t2"]))
    elif op == 3:            # zips: empty, self, duplicate, unset, unequal
        opts = [k for k in keys if k in OPTIONS] or ["layers"]
        lines.append(rng.choice(["zip =", "zip = " + opts[0] + " " + opts[0], "zip = colour", "zip = d n",
                                 "zip = " + " ".join(rng.sample(opts, min(2, len(opts)))), "zip = \t"]))
        if rng.random() < 0.5:
            lines.append(lines[-1])
    elif op == 4:            # list explosion: up to 8 options x 256 values (2^64 combinations)
        for k in rng.sample(["lr", "beta1", "beta2", "eps", "init_scale", "clip", "ridge_lambda", "diverge_factor"],
                            rng.randrange(1, 9)):
            lines.append(f"{k} = " + " ".join(f"{0.001 * (j + 1):g}" for j in range(rng.choice([3, 64, 256]))))
    elif op == 5:            # memory blow-ups
        for k, v in rng.sample(BLOWUPS, rng.randrange(1, 4)):
            lines.append(f"{k} = {v}")
    elif op == 6:            # sweep keys out of range
        lines.append(rng.choice(["repeats = 4294967297", "repeats = 0", "repeats = -1", "repeats = 1e3",
                                 "repeats = 10000000", "repeats = 1073741824", "repeats = 2 3", "sweep_seed = -1",
                                 "sweep_seed = 18446744073709551616", "seeds = both", "seeds =",
                                 "max_point_memory = 1K", "max_point_memory = nan", "max_point_memory = off"]))
    elif op == 7:            # binary junk inside the text
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))).decode("latin-1")
        lines.insert(rng.randrange(len(lines) + 1), junk)
    elif op == 8 and lines:  # drop a line
        del lines[rng.randrange(len(lines))]
    elif op == 9 and lines:  # double a line (repeated keys add to the list)
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif op == 10:           # keep only comments and sweep keys: a spec that sets no option
        lines = [l for l in lines if not key_of(l) or key_of(l) in SWEEP_KEYS]
    elif op == 11:           # a very long line
        lines.append("lr = " + "1" * rng.choice([1000, 100000]))
    elif op == 12 and lines:  # an option given twice on one line, or split over lines
        i = rng.randrange(len(lines))
        lines[i] = lines[i] + " " + lines[i]
    else:                    # cross-option rule breakers
        lines.append(rng.choice(["warmup = 1099511627776", "schedule = step", "cov = diag:1,2", "landscape = 1099511627776",
                                 "x_dist = sphere\ncov = diag:1,1,1,1,1", "noise = uniform:0", "steps = 1\nwarmup = 1"]))
    return lines


def main():
    presets_dir, out, count = sys.argv[1], pathlib.Path(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(11)
    presets = load_presets(presets_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for c in range(count):
        lines = rng.choice(presets)
        for _ in range(rng.randrange(1, 4)):
            lines = mutate(lines, rng)
        text = "\n".join(lines) + "\n"
        data = text.encode("utf-8", "surrogateescape") if rng.random() > 0.05 else text.replace("\n", "\r\n").encode("utf-8")
        r = rng.random()
        if r < 0.03:         # truncated at a random byte
            data = data[:rng.randrange(len(data) + 1)]
        elif r < 0.05:       # entirely random bytes
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4096)))
        p = out / f"case-{c:03d}.ini"
        p.write_bytes(data)
        paths.append(str(p))
    (out / "a_directory.ini").mkdir(exist_ok=True)
    fifo = out / "fifo.ini"
    if not fifo.exists():
        os.mkfifo(fifo)
    (out / "empty.ini").write_bytes(b"")
    (out / "nul.ini").write_bytes(b"\0" * 4096)
    (out / "nul_inside.ini").write_bytes(b"d = 5\0\nlayers = 1\n")
    (out / "over_1mib.ini").write_text("lr = " + " ".join(["0.001"] * 200000) + "\n")
    (out / "only_comments.ini").write_text("# nothing here\n\n   \n")
    (out / "only_repeats.ini").write_text("repeats = 3\nsweep_seed = 1\n")
    link = out / "link_to_dir.ini"
    if not link.is_symlink():
        link.symlink_to(out / "a_directory.ini")
    loop = out / "loop.ini"
    if not loop.is_symlink():
        loop.symlink_to(loop)
    paths += [str(out / n) for n in ["a_directory.ini", "fifo.ini", "empty.ini", "nul.ini", "nul_inside.ini",
                                     "over_1mib.ini", "only_comments.ini", "only_repeats.ini", "link_to_dir.ini",
                                     "loop.ini", "missing.ini"]]
    paths += ["/dev/zero", "/dev/null"]
    print("\n".join(paths))


if __name__ == "__main__":
    main()
