#!/usr/bin/env python3
"""Generates the FP8 block-rounding reference vectors BlockQuantizerRoundingTest checks mx against.

Run from this folder with PyTorch (CPU is enough; the vectors were made with torch 2.13.0+cpu):
    python3 generate.py
It writes, for each case, the bf16 input and, per rounding mode, the e4m3fn codes and f32 scale_inv that
PyTorch computes with the formula that mode names (mx's Fp8Rounding), all gzip-compressed little-endian:

  exact     x * (448 / amax), the quotient correctly rounded (computed in float64, then rounded to f32:
            a correctly rounded f32 quotient, whatever torch does for scalar / tensor)
  vllm      x * (1.0 / (amax / 448.0))    vLLM's per_block_cast_to_fp8
  deepgemm  x * (448.0 / amax)            as PyTorch evaluates a scalar over a tensor

amax = max|x| over the block (in f32), at least 1e-4; scale_inv = amax / 448; the product is cast with
.to(torch.float8_e4m3fn) after clamping to +-448 (a cast of a value at or past 464 would be NaN).

The input is a deterministic mix (torch.Generator seed 20261203): per block a gaussian of its own
amplitude, spread over binades 2^-20 .. 2^6, with an all-zero block, a block of bf16 subnormals, a block
holding one +inf and a block holding one NaN. Into every other block go up to 64 bf16 values (below its
amax, random signs) whose codes differ between the modes for that block's amax, found by trying every
positive bf16 below it: gaussian data alone moves ~0.03 % of the codes, too few for a small vector.
"""
import gzip
import json

import torch

# case -> (shape, block). "vllm128" is vLLM's block size; "many32" cuts the same formula into 128 smaller
# blocks, so many more amax values (and factors one ulp apart) are exercised in a small file.
CASES = {"vllm128": ((1, 256, 512), 128), "many32": ((1, 256, 512), 32)}
BLOCK = None  # set per case


def make_input(shape):
    g = torch.Generator().manual_seed(20261203)
    m, rows, cols = shape
    x = torch.empty(shape, dtype=torch.float32)
    k = 0
    for i in range(m):
        for br in range(rows // BLOCK):
            for bc in range(cols // BLOCK):
                amp = 2.0 ** (-20 + (k * 7) % 27) * (1 + (k % 5) / 7)  # 2^-20 .. 2^7
                blk = torch.randn((BLOCK, BLOCK), generator=g) * amp
                if k == 3:
                    blk.zero_()
                elif k == 5:
                    blk = torch.randn((BLOCK, BLOCK), generator=g) * 1e-39  # bf16 subnormals
                elif k == 9:
                    blk[7, 11] = float("inf")
                elif k == 12:
                    blk[BLOCK - 5, 3] = float("nan")
                else:
                    plant_boundaries(blk, g)
                x[i, br * BLOCK:(br + 1) * BLOCK, bc * BLOCK:(bc + 1) * BLOCK] = blk
                k += 1
    return x.to(torch.bfloat16)


def factors(amax):
    """The three modes' factors for a one-element f32 amax tensor."""
    return {
        "exact": (448.0 / amax.double()).float(),
        "vllm": 1.0 / (amax / 448.0),
        "deepgemm": 448.0 / amax,
    }


def plant_boundaries(blk, g):
    """Writes values whose code depends on the mode into blk (in place), keeping its bf16 amax."""
    b16 = blk.to(torch.bfloat16).float()
    blk.copy_(b16)
    amax = b16.abs().amax().clamp(1e-4).reshape(1)
    f = factors(amax)
    # Every positive bf16 strictly below amax.
    top = int(amax.to(torch.bfloat16).view(torch.int16).item())
    cand = torch.arange(1, top, dtype=torch.int32).to(torch.int16).view(torch.bfloat16).float()
    codes = {m: (cand * v).clamp(-448, 448).to(torch.float8_e4m3fn).view(torch.uint8) for m, v in f.items()}
    differ = (codes["exact"] != codes["vllm"]) | (codes["exact"] != codes["deepgemm"])
    picks = cand[differ]
    if len(picks) == 0:
        return
    order = torch.randperm(len(picks), generator=g)[: min(64, BLOCK * BLOCK // 8)]
    picks = picks[order]
    signs = torch.where(torch.rand(len(picks), generator=g) < 0.5, -1.0, 1.0)
    where = torch.randperm(BLOCK * BLOCK, generator=g)[: len(picks)]
    flat = blk.view(-1)
    # Keep the block's amax element where it is.
    keep = int(b16.abs().view(-1).argmax())
    for value, sign, at in zip(picks.tolist(), signs.tolist(), where.tolist()):
        if at != keep:
            flat[at] = value * sign


def quantize(x_bf16, mode):
    m, rows, cols = x_bf16.shape
    xv = x_bf16.view(m, rows // BLOCK, BLOCK, cols // BLOCK, BLOCK)
    amax = xv.abs().float().amax(dim=(2, 4), keepdim=True).clamp(1e-4)
    factor = factors(amax)[mode]
    scaled = (xv.float() * factor).clamp(-448.0, 448.0)
    codes = scaled.to(torch.float8_e4m3fn).view(m, rows, cols)
    scale_inv = (amax / 448.0).view(m, rows // BLOCK, cols // BLOCK)
    return codes, scale_inv


def write(name, t):
    with gzip.GzipFile(name, "wb", mtime=0) as f:
        f.write(t.contiguous().view(torch.uint8).numpy().tobytes())


def main():
    meta = {}
    global BLOCK
    for case, (shape, block) in CASES.items():
        BLOCK = block
        x = make_input(shape)
        write(f"{case}.input.bf16.gz", x)
        meta[case] = {"shape": list(shape), "block": block, "modes": {}}
        codes = {}
        for mode in ("exact", "vllm", "deepgemm"):
            c, s = quantize(x, mode)
            codes[mode] = c.view(torch.uint8)
            write(f"{case}.{mode}.codes.gz", c)
            write(f"{case}.{mode}.scales.gz", s)
            meta[case]["modes"][mode] = {}
        for mode in ("vllm", "deepgemm"):
            diff = int((codes[mode] != codes["exact"]).sum())
            meta[case]["modes"][mode]["codes_differing_from_exact"] = diff
    meta["torch"] = torch.__version__
    with open("vectors.json", "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")
    print(json.dumps(meta, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
