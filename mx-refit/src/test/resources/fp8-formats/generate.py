#!/usr/bin/env python3
"""Reference vectors for the FP8 formats other than fp8-block (QuantFormatVectorsTest).

Run from this folder with numpy and PyTorch (CPU is enough; made with numpy and torch 2.13.0+cpu):
    python3 generate.py
The input is the generator's data with per-block amplitudes, recomputed by ../fp8-amplitude/generate.py
(tile 32: 32 binades, zero and subnormal tiles), shape [2, 64, 160] of tensor INPUT_NAME at step 2, into
which a NaN (matrix 1, row 5, column 7), a +inf (matrix 1, row 40, column 100) and an all-zero row
(matrix 0, row 10) are written. Each format's rule, written here from its public definition:

  fp8-block-ue8m0  64 x 64 blocks (partial at the edges); amax = max|x| in f32, at least 1e-4;
                   sf = 2 ** ceil(log2(amax / 448)) as DeepGEMM's / vLLM's ceil_to_ue8m0 computes it
                   (torch.pow(2.0, torch.ceil(torch.log2(sf)))); codes = e4m3fn(clamp(x * (1.0 / sf)));
                   scales: sf as f32, [2, 1, 3]
  mxfp8            1 x 32 blocks along the columns (OCP MX v1.0): amax = max|x|; shared exponent
                   e = clamp(floor(log2(amax)) - 8, -127, 127) (floor(log2) from np.frexp, exact; an
                   all-zero block clamps to -127); codes = e4m3fn(clamp(x * 2**-e)); scales: the E8M0
                   byte e + 127 (u8), [2, 64, 5]; a block holding NaN or inf: byte 0xff and NaN codes
  fp8-tensor       one scale per matrix: amax over the matrix, at least 1e-4; scale = amax / 448 (f32);
                   codes = e4m3fn(clamp(x * factor)) with the rounding mode's factor (exact 448/amax in
                   float64 then f32; vllm 1.0/(amax/448.0); deepgemm 448.0/amax), scales [2, 1, 1]
  fp8-channel      one scale per row, as fp8-tensor otherwise; scales [2, 64, 1]

clamp is to +-448 before .to(torch.float8_e4m3fn). Written little-endian, gzip: input.bf16.gz and per
variant <variant>.codes.gz / <variant>.scales.gz; vectors.json lists the variants.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fp8-amplitude"))
import generate as amplitude  # noqa: E402  (the independent generator, next door)

INPUT_NAME = "model.layers.1.mlp.down_proj.weight"
SHAPE = (2, 64, 160)
STEP = 2
UE8M0_BLOCK = 64


def make_input():
    bits = amplitude.values(INPUT_NAME, STEP, SHAPE, 32).copy()
    x = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16).clone()
    x[1, 5, 7] = float("nan")
    x[1, 40, 100] = float("inf")
    x[0, 10, :] = 0
    return x


def e4m3(t):
    return t.clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(torch.uint8)


def ue8m0(x):
    m, rows, cols = x.shape
    b = UE8M0_BLOCK
    pr, pc = -(-rows // b) * b, -(-cols // b) * b
    xf = torch.zeros((m, pr, pc), dtype=torch.float32)
    xf[:, :rows, :cols] = x.float()
    xv = xf.view(m, pr // b, b, pc // b, b)
    amax = xv.abs().amax(dim=(2, 4), keepdim=True).clamp(1e-4)
    sf = amax / 448.0
    sf = torch.pow(2.0, torch.ceil(torch.log2(sf.abs())))
    codes = e4m3(xv * (1.0 / sf)).view(m, pr, pc)[:, :rows, :cols].contiguous()
    return codes, sf.view(m, pr // b, pc // b).contiguous()


def mxfp8(x):
    m, rows, cols = x.shape
    xf = x.float().numpy().reshape(m, rows, cols // 32, 32)
    with np.errstate(invalid="ignore"):
        amax = np.abs(xf).max(axis=3)
    finite = np.isfinite(amax)
    _, e2 = np.frexp(np.where(finite, amax, 1).astype(np.float32))
    e = np.where(amax > 0, e2.astype(np.int32) - 1 - 8, -127)
    e = np.clip(e, -127, 127)
    scale_bytes = np.where(finite, e + 127, 255).astype(np.uint8)
    f = np.where(finite, np.ldexp(np.float32(1), -e).astype(np.float32), np.float32(np.nan)).astype(np.float32)
    scaled = torch.from_numpy((xf * f[..., None]).astype(np.float32)).view(m, rows, cols)
    return e4m3(scaled).contiguous(), torch.from_numpy(scale_bytes)


def per(x, dims, mode):
    xf = x.float()
    amax = xf.abs().amax(dim=dims, keepdim=True).clamp(1e-4)
    return e4m3(xf * amplitude.factor(amax, mode)).contiguous(), (amax / 448.0).contiguous()


def write(name, t):
    amplitude.write(name, t.contiguous().view(torch.uint8).numpy() if isinstance(t, torch.Tensor) else t)


def main():
    x = make_input()
    write("input.bf16.gz", x)
    variants = {"fp8-block-ue8m0": ue8m0(x), "mxfp8": mxfp8(x)}
    for mode in ("exact", "vllm", "deepgemm"):
        variants["fp8-tensor." + mode] = per(x, (1, 2), mode)
        variants["fp8-channel." + mode] = per(x, (2,), mode)
    meta = {"tensor": INPUT_NAME, "step": STEP, "shape": list(SHAPE), "ue8m0_block": UE8M0_BLOCK, "variants": {}}
    for name, (codes, scales) in variants.items():
        write(name + ".codes.gz", codes)
        write(name + ".scales.gz", scales)
        meta["variants"][name] = {"scale_shape": list(scales.shape)}
    amplitude.save_meta(meta)


if __name__ == "__main__":
    main()
