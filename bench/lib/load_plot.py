"""bench/results/load.png: p90 TTFT against offered load, direct vs ragtrim, per backend."""

from __future__ import annotations

from bench.lib.common import RESULTS


def plot(by_backend: dict, name: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        1, len(by_backend), figsize=(4.6 * len(by_backend), 4.2), squeeze=False
    )
    for ax, (backend, result) in zip(axes[0], by_backend.items(), strict=True):
        levels = result["levels"]
        x = [lv["multiple"] for lv in levels]
        for path, fmt in (("direct", "o-"), ("ragtrim", "s-")):
            ax.plot(x, [lv[path]["ttft_p90_ms"] / 1000 for lv in levels], fmt, label=path)
        ax.axhline(result["slo_p90_ms"] / 1000, color="grey", ls="--", lw=1, label="SLO")
        ax.set_yscale("log")
        ax.set_title(f"{backend} (direct capacity {result['direct_capacity_rps']:.1f} req/s)")
        ax.set_xlabel("offered load (x direct's capacity)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("TTFT p90 (s)")
    axes[0][0].legend()
    fig.suptitle("Open-loop Poisson load: p90 time to first token")
    fig.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    fig.savefig(RESULTS / f"{name}.png", dpi=110)
    plt.close(fig)
