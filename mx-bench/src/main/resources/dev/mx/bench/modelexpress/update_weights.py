#!/usr/bin/env python3
"""Times ModelExpress's unmodified ReshardReceiver.update_weights on an mx planning request.

mx's `mx bench modelexpress` writes one planning request per inference rank (docs/PLAN-FORMAT.md,
with the receiver's "params" layout) and runs this script on it, so that both receivers refit the
same plan over the same bytes in memory. ModelExpress is not part of mx: point --modelexpress at
its Python client (the folder holding the `modelexpress` package, i.e. modelexpress_client/python
of a ModelExpress checkout) and run with a Python that has torch.

What runs is ModelExpress's own code: its planner (plan_transfer) and its update_weights (descriptor
build, fused wire, re-slice of full pulls, dtype casts, install hook). Only what update_weights
needs from the one-time _prepare is done here, because _prepare discovers trainers through a
ModelExpress server and registers memory with NIXL: the receive, convert-staging and full-staging
buffers are allocated as _prepare allocates them (CPU tensors here), and the wire is ModelExpress's
InMemoryReferenceTransport (ctypes.memmove over real addresses), the counterpart of mx's `mem`
transport. The install hook adopts the buffers (no copy), as mx's benchmark installer does.
ModelExpress verifies nothing on this path.

Prints one JSON document on stdout: the warm steps' end-to-end and stage seconds, the bytes and
descriptors of a step, and the plan's figures, for mx to compare with its own plan.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time


def _dtype(torch, label: str):
    """torch.bfloat16, bfloat16, bf16 ... -> the torch dtype."""
    bare = label.split(".")[-1].lower()
    aliases = {
        "bf16": "bfloat16",
        "f16": "float16",
        "fp16": "float16",
        "half": "float16",
        "f32": "float32",
        "fp32": "float32",
        "float": "float32",
        "f64": "float64",
        "i64": "int64",
        "i32": "int32",
        "u8": "uint8",
        "fp8": "float8_e4m3fn",
        "f8_e4m3": "float8_e4m3fn",
        "float8_e4m3": "float8_e4m3fn",
    }
    name = aliases.get(bare, bare)
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise SystemExit(f"update_weights.py: unknown dtype '{label}' in the request")
    return dtype


def _index_item(item):
    """One getitem item of the request ([start, stop(, step)] with null, "...", int) in Python."""
    if item == "...":
        return Ellipsis
    if isinstance(item, list):
        return slice(*item)
    return item


def _op_chain(chain: list) -> tuple:
    """[name, [args...](, {kwargs})] -> ModelExpress's (name, args, frozen kwargs)."""
    ops = []
    for op in chain:
        name = op[0]
        args = list(op[1]) if len(op) > 1 and op[1] is not None else []
        kwargs = dict(op[2]) if len(op) > 2 and op[2] is not None else {}
        if name in ("getitem", "__getitem__"):
            items = [_index_item(a) for a in args]
            args = [items[0] if len(items) == 1 else tuple(items)]
            name = "__getitem__"
        ops.append((name, tuple(args), tuple(sorted(kwargs.items()))))
    return tuple(ops)


def _publisher_memory(torch, request: dict) -> dict:
    """One buffer per session spanning its shards at their relative addresses (mx's synthetic
    addresses lay a trainer rank's buffers out back to back), filled with bytes that are not zero
    so no read is served by the kernel's shared zero page. Returns session -> (tensor, the lowest
    address it stands for)."""
    spans: dict[str, list[int]] = {}
    for info in request["sources"].values():
        elsize = torch.empty((), dtype=_dtype(torch, info["dtype"])).element_size()
        for shard in info["shards"]:
            nbytes = elsize
            for extent in shard["shape"]:
                nbytes *= extent
            lo, hi = shard["addr"], shard["addr"] + nbytes
            span = spans.setdefault(shard["session"], [lo, hi])
            span[0], span[1] = min(span[0], lo), max(span[1], hi)
    memory = {}
    generator = torch.Generator().manual_seed(37)
    for session, (lo, hi) in sorted(spans.items()):
        buffer = torch.empty(hi - lo, dtype=torch.uint8)
        buffer.random_(1, 256, generator=generator)
        memory[session] = (buffer, lo)
    return memory


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modelexpress", required=True, help="folder holding the modelexpress package")
    parser.add_argument("--request", required=True, help="an mx planning request with params")
    parser.add_argument("--warmup", type=int, default=2, help="cold steps before timing (default 2)")
    parser.add_argument("--steps", type=int, default=5, help="timed warm steps (default 5)")
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    args = parser.parse_args()

    receiver_py = os.path.join(args.modelexpress, "modelexpress", "refit", "reshard", "receiver.py")
    if not os.path.isfile(receiver_py):
        raise SystemExit(
            f"update_weights.py: no ModelExpress client at {args.modelexpress} "
            f"(expected {receiver_py}); point --modelexpress at modelexpress_client/python"
        )
    sys.path.insert(0, args.modelexpress)
    import torch

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    # update_weights synchronizes the CUDA device after each local stage; these buffers are on the
    # CPU, where that call has nothing to wait for (ModelExpress's own CPU tests do the same).
    torch.cuda.synchronize = lambda *a, **k: None

    from modelexpress.refit.reshard.receiver import ReshardReceiver
    from modelexpress.refit.reshard.slice_plan import Shard
    from modelexpress.refit.reshard.transfer_plan import SourceInfo, plan_transfer
    from modelexpress.refit.reshard.transport import InMemoryReferenceTransport
    from modelexpress.refit.reshard.types import CaptureResult, RecordedCopy

    with open(args.request, encoding="utf-8") as f:
        request = json.load(f)
    if not request.get("params"):
        raise SystemExit(f"update_weights.py: {args.request} has no \"params\" (the receive buffers' layout)")

    memory = _publisher_memory(torch, request)
    sources = {}
    for name, info in request["sources"].items():
        dtype = _dtype(torch, info["dtype"])
        elsize = torch.empty((), dtype=dtype).element_size()
        shards = []
        for shard in info["shards"]:
            buffer, lo = memory[shard["session"]]
            shards.append(
                Shard(
                    shard_offset=tuple(shard["offset"]),
                    shape=tuple(shard["shape"]),
                    session=shard["session"],
                    addr=buffer.data_ptr() + (shard["addr"] - lo),
                    elsize=elsize,
                    digest=shard.get("digest"),
                )
            )
        sources[name] = SourceInfo(
            global_shape=tuple(info["global_shape"]), dtype=dtype, elsize=elsize, shards=shards
        )
    capture = CaptureResult(
        copies=[
            RecordedCopy(
                src_name=c["src"],
                op_chain=_op_chain(c.get("op_chain") or []),
                param_name=c["param"],
                dest_offset=c["dest_offset"],
                dest_shape=tuple(c["dest_shape"]),
                dest_stride=tuple(c["dest_stride"]),
                dest_dtype=_dtype(torch, c["dest_dtype"]),
            )
            for c in request["copies"]
        ],
        unsupported=list((request.get("unsupported") or {}).keys()),
        unsupported_reasons=dict(request.get("unsupported") or {}),
    )
    started = time.perf_counter()
    plan = plan_transfer(capture, sources, max_segments_per_copy=request.get("max_segments_per_copy"))
    plan_s = time.perf_counter() - started
    if plan.fallback:
        raise SystemExit(f"update_weights.py: ModelExpress cannot plan {plan.fallback[:10]}")

    transport = InMemoryReferenceTransport()
    receiver = _receiver(ReshardReceiver, torch, request, plan, transport)
    steps = []
    for step in range(args.warmup + args.steps):
        started = time.perf_counter()
        metrics = receiver.update_weights(step)
        metrics["e2e_s"] = time.perf_counter() - started
        if step >= args.warmup:
            steps.append(metrics)

    def median(key):
        values = [m[key] for m in steps if key in m]
        return statistics.median(values) if values else None

    print(
        json.dumps(
            {
                "modelexpress": args.modelexpress,
                "torch": torch.__version__,
                "threads": torch.get_num_threads(),
                "plan_s": plan_s,
                "descriptor_count": plan.descriptor_count(),
                "bytes_planned": plan.bytes_planned(),
                "exact_descriptor_count": plan.exact_descriptor_count,
                "full_pulls": len(plan.full_pulls),
                "converts": len(plan.converts),
                "bytes_received": steps[-1]["bytes_received"] if steps else 0,
                "e2e_s": [m["e2e_s"] for m in steps],
                "median_e2e_s": median("e2e_s"),
                "median_wire_fused_s": median("wire_fused_s"),
                "median_reslice_s": median("reslice_s"),
                "median_convert_s": median("convert_s"),
                "median_descriptor_build_s": median("descriptor_build_s"),
            }
        )
    )
    return 0


def _receiver(receiver_class, torch, request: dict, plan, transport):
    """A ReshardReceiver whose one-time state is what _prepare leaves behind, minus the ModelExpress
    server and NIXL: buffers allocated the way _prepare allocates them, on the CPU."""

    class Receiver(receiver_class):
        def __init__(self):  # noqa: D107 - bypasses the NIXL agent and the metadata client
            self._device = torch.device("cpu")
            self._timeout = 60.0
            self._global_rank = 0
            self._plan = plan
            self._transport = transport
            self._cached_descriptors = None
            self._prepare_stages = {}
            self._staging = {
                c.param_name: torch.empty(c.dest_shape, dtype=c.src_dtype) for c in plan.converts
            }
            self._staging_ptr = {n: t.data_ptr() for n, t in self._staging.items()}
            self._full_staging = {
                f.src_name: torch.empty(f.global_shape, dtype=f.dtype) for f in plan.full_pulls
            }
            self._full_staging_ptr = {n: t.data_ptr() for n, t in self._full_staging.items()}
            self._recv_buffers = {
                name: torch.empty(tuple(spec["shape"]), dtype=_dtype(torch, spec["dtype"]))
                for name, spec in request["params"].items()
            }
            self._param_ptr = {
                s.param_name: self._recv_buffers[s.param_name].data_ptr() for s in plan.segments
            }

        def _install(self, recv_buffers):
            """The engine adopts the receive buffers: nothing to copy."""

    return Receiver()


if __name__ == "__main__":
    sys.exit(main())
