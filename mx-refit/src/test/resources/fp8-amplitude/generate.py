#!/usr/bin/env python3
"""Reference vectors for installing generator data with per-block amplitudes (Fp8AmplitudeInstallTest).

Run from this folder with numpy and PyTorch (CPU is enough; made with numpy and torch 2.13.0+cpu):
    python3 generate.py
It recomputes, independently of mx, the synthetic weights of ARCHITECTURE 5.4 scaled by the generator's
per-block amplitude (dev.mx.layout.gen.BlockAmplitude, whose javadoc states the rule), stores them as bf16
(round to nearest even), and block-quantizes them to float8_e4m3fn with PyTorch for each rounding mode:

  exact     x * (448 / amax), the quotient correctly rounded (computed in float64, then rounded to f32)
  vllm      x * (1.0 / (amax / 448.0))    vLLM's per_block_cast_to_fp8
  deepgemm  x * (448.0 / amax)            as PyTorch evaluates a scalar over a tensor

amax = max|x| over the block in f32, at least 1e-4; scale_inv = amax / 448 (f32); products are clamped to
+-448 before .to(torch.float8_e4m3fn). Edge blocks are partial. Written per case (little-endian, gzip):
<case>.vllm.codes.gz and <case>.scales.gz (the scales are the same in every mode); vectors.json holds the
SHA-256 of the bf16 input and of every mode's codes, and how many codes differ from exact.
"""
import gzip
import hashlib
import json

import numpy as np
import torch

M64 = (1 << 64) - 1
# case -> (tensor name, step, shape [matrices, rows, cols], amplitude tile = quantization block)
CASES = {
    "down128": ("model.layers.0.mlp.down_proj.weight", 1, (2, 320, 384), 128),
    "many32": ("model.layers.3.self_attn.o_proj.weight", 0, (1, 160, 224), 32),
}


def fnv1a64(name):
    h = 0xCBF29CE484222325
    for b in name.encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) & M64
    return h


def splitmix64(x):
    """Vectorised over a uint64 array (numpy wraps uint64 arithmetic modulo 2^64)."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def values(name, step, shape, tile):
    m, rows, cols = shape
    n = m * rows * cols
    i = np.arange(n, dtype=np.uint64)
    key = np.uint64(fnv1a64(name) ^ ((step * 0x9E3779B97F4A7C15) & M64))
    u = splitmix64(key ^ i)
    v = (((u >> np.uint64(40)).astype(np.int64) - 8388608).astype(np.float32)) * np.float32(2.0**-24)
    # The amplitude of each element's tile.
    c = i % np.uint64(cols)
    r = (i // np.uint64(cols)) % np.uint64(rows)
    mm = i // np.uint64(cols * rows)
    tr = (rows + tile - 1) // tile
    tc = (cols + tile - 1) // tile
    t = (mm * np.uint64(tr) + r // np.uint64(tile)) * np.uint64(tc) + c // np.uint64(tile)
    h = splitmix64(np.uint64(fnv1a64(name + "#amplitude")) ^ t)
    mant = np.float32(1) + ((h >> np.uint64(36)) & np.uint64(0x7FFFFF)).astype(np.float32) * np.float32(2.0**-23)
    e = (h >> np.uint64(59)).astype(np.int32) - 20
    a = np.ldexp(mant, e).astype(np.float32)
    kind = t & np.uint64(15)
    a = np.where(kind == 3, np.float32(0), a)
    a = np.where(kind == 7, np.float32(2.0**-126), a).astype(np.float32)
    x = (v * a).astype(np.float32)  # one f32 rounding, to nearest even
    bits = x.view(np.uint32).astype(np.uint64)
    bf16 = ((bits + np.uint64(0x7FFF) + ((bits >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)).astype(np.uint16)
    return bf16.reshape(shape)


def factor(amax, mode):
    if mode == "exact":
        return (448.0 / amax.double()).float()
    if mode == "vllm":
        return 1.0 / (amax / 448.0)
    return 448.0 / amax


def quantize(x_bf16, block, mode):
    m, rows, cols = x_bf16.shape
    pr = (rows + block - 1) // block * block
    pc = (cols + block - 1) // block * block
    xf = torch.zeros((m, pr, pc), dtype=torch.float32)
    xf[:, :rows, :cols] = x_bf16.float()
    xv = xf.view(m, pr // block, block, pc // block, block)
    amax = xv.abs().amax(dim=(2, 4), keepdim=True).clamp(1e-4)
    scaled = (xv * factor(amax, mode)).clamp(-448.0, 448.0)
    codes = scaled.to(torch.float8_e4m3fn).view(m, pr, pc)[:, :rows, :cols].contiguous()
    scale_inv = (amax / 448.0).view(m, pr // block, pc // block).contiguous()
    return codes.view(torch.uint8).numpy(), scale_inv.numpy()


def write(name, array):
    with gzip.GzipFile(name, "wb", mtime=0) as f:
        f.write(np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes())


def sha(array):
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def main():
    meta = {}
    for case, (name, step, shape, tile) in CASES.items():
        bits = values(name, step, shape, tile)
        x = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)
        entry = {"tensor": name, "step": step, "shape": list(shape), "block": tile, "input_sha256": sha(bits)}
        codes = {}
        for mode in ("exact", "vllm", "deepgemm"):
            c, s = quantize(x, tile, mode)
            codes[mode] = c
            entry[mode + "_codes_sha256"] = sha(c)
            if mode == "vllm":
                write(f"{case}.vllm.codes.gz", c)
                write(f"{case}.scales.gz", s)
        for mode in ("vllm", "deepgemm"):
            entry[mode + "_codes_differing_from_exact"] = int((codes[mode] != codes["exact"]).sum())
        f = x.float()
        entry["zero_elements"] = int((f == 0).sum())
        entry["subnormal_elements"] = int(((f != 0) & (f.abs() < 2.0**-126)).sum())
        meta[case] = entry
    save_meta(meta)


def save_meta(meta):
    """Writes vectors.json with the library versions that made the vectors, and prints it."""
    meta["numpy"] = np.__version__
    meta["torch"] = torch.__version__
    text = json.dumps(meta, indent=2, sort_keys=True) + "\n"
    with open("vectors.json", "w") as f:
        f.write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
