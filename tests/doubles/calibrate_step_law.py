"""Measures the step law of the `qwen3-32b-2xh100` fleet preset on a real GPU.

Why: sched_sim's StepLaw models a vLLM engine step as
    step_ms = base_ms + per_prefill_token_ms * prefill_tokens + per_seq_ms * decoding_sequences
and kv_replica's `qwen3-32b-2xh100` preset (0.074 ms a prefill token, 12 ms base, 0.06 ms a
decoding sequence) was derived on paper (FLOPs at ~45 % MFU). This script is where measured
figures come from: it times a randomly initialised Qwen3-32B-shaped model (no weights are
needed: the shape alone sets the cost) in HF transformers, bf16, SDPA attention:
1. prefill of one sequence of N new tokens, no cache, N in PREFILL_TOKENS;
2. prefill of 400 new tokens on top of a 1,536-token cached prefix (the prefix's
   past_key_values from a first pass; only the second pass is timed);
3. one decode step (one new token a sequence) at batch B in DECODE_BATCHES, 1,536 tokens of
   context each (a StaticCache, so no per-step copy of the cache is timed);
4. the least-squares fit step_ms = base + a * prefill_tokens over the points of 1, and the
   per-sequence slope of 3 over B.
Each timing: WARMUPS warm-ups, then the median of REPEATS, with torch.cuda.synchronize()
around a time.perf_counter() pair. The figures are for one GPU holding the whole model
(vLLM's TP 2 halves each GPU's work but adds all-reduces), and HF eager decode is
launch-bound, so the decode figures are an upper bound of vLLM's CUDA-graph step.

How to run (needs a CUDA GPU with ~100 GB free; torch and transformers >= 5):
    python3 tests/doubles/calibrate_step_law.py --out step_law.json
`--tiny` shrinks the model and the token counts to smoke-test the script on a CPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence

QWEN3_32B = {
    "hidden_size": 5120,
    "intermediate_size": 25600,
    "num_hidden_layers": 64,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 151936,
    "max_position_embeddings": 40960,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
}
TINY = QWEN3_32B | {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 512,
    "max_position_embeddings": 2048,
}
ROPE_THETA = 1_000_000.0
PREFILL_TOKENS = (512, 2048, 6144)
PREFIX_TOKENS, CACHED_NEW_TOKENS = 1536, 400
DECODE_BATCHES = (1, 16, 64)
SIZES = {"prefill": PREFILL_TOKENS, "prefix": PREFIX_TOKENS, "new": CACHED_NEW_TOKENS,
         "batches": DECODE_BATCHES}  # fmt: skip
TINY_SIZES = {"prefill": (16, 32, 64), "prefix": 24, "new": 8, "batches": (1, 2, 4)}
WARMUPS, REPEATS = 2, 5
PRESET = {"per_prefill_token_ms": 0.074, "base_ms": 12.0, "per_seq_ms": 0.06}
DECODE_NOTE = (
    "HF eager decode is launch-bound (hundreds of small kernels a step, no CUDA graph): "
    "these decode times are an upper bound of vLLM's CUDA-graph step"
)


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least-squares (intercept, slope) of ys over xs."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError("need at least two (x, y) points")
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("all x are equal: the slope is undefined")
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return my - slope * mx, slope


def fit_step_law(prefill_ms: dict[int, float], decode_ms: dict[int, float]) -> dict[str, float]:
    """The step law's figures: base and per-token slope from prefill times by token count,
    per-sequence slope (and its intercept) from decode-step times by batch size."""
    base, per_token = fit_line(list(prefill_ms), list(prefill_ms.values()))
    decode_base, per_seq = fit_line(list(decode_ms), list(decode_ms.values()))
    return {
        "base_ms": base,
        "per_prefill_token_ms": per_token,
        "per_seq_ms": per_seq,
        "decode_base_ms": decode_base,
    }


def median_ms(
    fn: Callable[[], object], sync: Callable[[], None], setup: Callable[[], None] | None = None
) -> dict[str, float | list[float]]:
    """WARMUPS untimed calls, then the median of REPEATS timed ones; `setup` runs untimed
    before each call."""
    samples = []
    for i in range(WARMUPS + REPEATS):
        if setup is not None:
            setup()
        sync()
        start = time.perf_counter()
        fn()
        sync()
        if i >= WARMUPS:
            samples.append((time.perf_counter() - start) * 1e3)
    return {"ms": statistics.median(samples), "samples_ms": [round(s, 3) for s in samples]}


def build_model(tiny: bool):
    """A randomly initialised Qwen3 model, built in place on its device (bf16 on CUDA)."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    device, dtype = ("cpu", torch.float32) if tiny else ("cuda", torch.bfloat16)
    config = Qwen3Config(
        **(TINY if tiny else QWEN3_32B),
        rope_parameters={"rope_type": "default", "rope_theta": ROPE_THETA},
        attn_implementation="sdpa",
    )
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = Qwen3ForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)
    with torch.no_grad():
        for param in model.parameters():
            if param.ndim == 1:  # the RMSNorm weights
                param.fill_(1.0)
            else:
                param.normal_(0.0, 0.02)
    inv_freq = model.model.rotary_emb.inv_freq
    assert inv_freq.device.type == device and bool(torch.isfinite(inv_freq).all())
    return model.eval()


def _ids(model, *shape: int):
    import torch

    return torch.randint(0, model.config.vocab_size, shape, device=model.device)


def prefill_points(model, sizes: Sequence[int], sync) -> list[dict]:
    """One sequence of n new tokens, no cache, for each n."""
    points = []
    for n in sizes:
        ids = _ids(model, 1, n)
        timing = median_ms(lambda ids=ids: model(input_ids=ids, logits_to_keep=1), sync)
        points.append({"tokens": n, **timing, "ms_per_token": timing["ms"] / n})
    return points


def cached_prefill(model, prefix: int, new: int, sync) -> tuple[dict, object]:
    """`new` tokens on top of a `prefix`-token cache from a first pass (untimed); the
    cache, back at the prefix, is returned for the decode steps."""
    import torch

    ids = _ids(model, 1, prefix + new)
    first = model(input_ids=ids[:, :prefix], use_cache=True, logits_to_keep=1)
    assert bool(torch.isfinite(first.logits).all()), "non-finite logits"
    cache = first.past_key_values
    saved = [(layer.keys, layer.values) for layer in cache.layers]

    def reset() -> None:
        for layer, (keys, values) in zip(cache.layers, saved, strict=True):
            layer.keys, layer.values = keys, values

    timing = median_ms(
        lambda: model(input_ids=ids[:, prefix:], past_key_values=cache, logits_to_keep=1),
        sync,
        reset,
    )
    reset()
    result = {"prefix_tokens": prefix, "new_tokens": new, **timing}
    return result | {"ms_per_new_token": timing["ms"] / new}, cache


def _batch_cache(model, prefix, batch: int, static: bool):
    """`batch` copies of the prefix's KV, and a reset back to the prefix's length."""
    from transformers import DynamicCache, StaticCache

    length = prefix.get_seq_length()
    if static:
        cache = StaticCache(config=model.config, max_cache_len=length + 1)
    else:
        cache = DynamicCache(config=model.config)
    for i, layer in enumerate(prefix.layers):
        keys = layer.keys.expand(batch, -1, -1, -1).contiguous()
        cache.update(keys, layer.values.expand(batch, -1, -1, -1).contiguous(), i)
    saved = [(layer.keys, layer.values) for layer in cache.layers]

    def reset() -> None:
        for layer, (keys, values) in zip(cache.layers, saved, strict=True):
            if static:
                layer.cumulative_length.fill_(length)
            else:
                layer.keys, layer.values = keys, values

    return cache, reset


def _decode_point(model, prefix, batch: int, sync, static: bool) -> dict:
    cache, reset = _batch_cache(model, prefix, batch, static)
    ids = _ids(model, batch, 1)
    timing = median_ms(
        lambda: model(input_ids=ids, past_key_values=cache, logits_to_keep=1), sync, reset
    )
    return {"batch": batch, **timing}


def decode_points(model, prefix, batches: Sequence[int], sync, static: bool) -> list[dict]:
    """One decode step (one new token a sequence) at each batch size."""
    import torch

    points = []
    for batch in batches:
        points.append(_decode_point(model, prefix, batch, sync, static))
        if torch.cuda.is_available():
            torch.cuda.empty_cache()  # the last batch's cache
    return points


def decode_section(model, prefix, batches: Sequence[int], sync) -> dict:
    """Decode over a StaticCache (written in place, as vLLM's paged cache is); should that
    fail on this transformers, over a DynamicCache (which copies the whole cache a step)."""
    context = prefix.get_seq_length()
    try:
        points, kind = decode_points(model, prefix, batches, sync, static=True), "StaticCache"
    except Exception as exc:  # record it and fall back
        print(f"StaticCache decode failed ({exc!r}); using DynamicCache", file=sys.stderr)
        points = decode_points(model, prefix, batches, sync, static=False)
        kind = f"DynamicCache (copies the cache each step; StaticCache failed: {exc!r:.200})"
    return {"context_tokens": context, "cache": kind, "points": points, "note": DECODE_NOTE}


def environment(model) -> dict:
    import torch
    import transformers

    cuda = torch.cuda.is_available() and model.device.type == "cuda"
    return {
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "dtype": str(next(model.parameters()).dtype),
        "attn_implementation": model.config._attn_implementation,
        "params": sum(p.numel() for p in model.parameters()),
        "timing": f"{WARMUPS} warm-ups, median of {REPEATS}, synchronize + perf_counter",
    }


def measure(tiny: bool) -> dict:
    import torch

    sizes = TINY_SIZES if tiny else SIZES
    if tiny:
        torch.set_num_threads(1)
    elif not torch.cuda.is_available():
        raise SystemExit("needs a CUDA GPU (or --tiny for a CPU smoke test)")
    sync = torch.cuda.synchronize if not tiny else lambda: None
    model = build_model(tiny)
    with torch.inference_mode():
        prefill = prefill_points(model, sizes["prefill"], sync)
        cached, prefix = cached_prefill(model, sizes["prefix"], sizes["new"], sync)
        decode = decode_section(model, prefix, sizes["batches"], sync)
    fit = fit_step_law({p["tokens"]: p["ms"] for p in prefill},
                       {p["batch"]: p["ms"] for p in decode["points"]})  # fmt: skip
    cached["fit_predicted_ms"] = fit["base_ms"] + fit["per_prefill_token_ms"] * cached["new_tokens"]
    return {"model": "Qwen3-32B shape" + (" (--tiny)" if tiny else ""), **environment(model),
            "prefill": prefill, "cached_prefill": cached, "decode": decode, "fit": fit,
            "preset_qwen3_32b_2xh100": PRESET}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the JSON here too")
    parser.add_argument("--tiny", action="store_true", help="a tiny model on CPU (smoke test)")
    args = parser.parse_args(argv)
    result = measure(args.tiny)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
