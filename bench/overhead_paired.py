"""ragtrim at two commits, paired in one interleaved run: is the new tree slower?

A refactor must not cost latency (issue 21: "the overhead benchmark is no slower than
before, paired in one run, the old commit against the new"). Two separate runs of
bench.overhead on a shared 2-core machine differ by more than the effect being looked
for, so both trees serve side by side here, in front of the same stub, and every round
sends one request to each in turn:

    direct    tests/doubles/fast_stub.py (the floor both are measured against)
    baseline  `python -m proxy serve` from a git worktree of `--baseline` (a revision;
              default HEAD~1)
    current   `python -m proxy serve` from this checkout

Each tree imports its own packages: the server runs with the tree as its working
directory and first on PYTHONPATH (the editable install's finder comes after sys.path).
Two bodies: the overhead benchmark's plain chat request, and a RAG-shaped one (a
LangChain "stuff" prompt with three documents) that the pipeline segments and the gate
prices (it skips: the stub reports no prefill cost). Keys: `added_p50_ms` and CPU ms per
request for both trees, and `current_vs_baseline_added_p50` (≤ 1.0 means no slower).

    .venv/bin/python -m bench.overhead_paired [--baseline REV] [--n 1500]

(`make bench` runs it against HEAD~1: is the last commit slower than the one before?)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.lib.common import ROOT, free_port, percentile, spawn, spawn_ragtrim, stop, write_result
from bench.lib.loadgen import Timed
from bench.lib.procs import cpu_ms

PATH = "/v1/chat/completions"
PLAIN = {"model": "stub-model", "messages": [{"role": "user", "content": "hello " * 50}]}
DOCS = [
    "The harbour bridge opened to traffic on 19 March 1932 after eight years of work. "
    "Its main steel arch spans 503 metres and carries eight lanes of road traffic. " * 3,
    "River deltas form where a river slows and drops its sediment. Dams upstream trap "
    "much of it, which is why several large deltas are now shrinking. " * 3,
    "A sourdough starter is a culture of wild yeast and lactic acid bacteria kept in "
    "flour and water. Bakers feed it every day or two. " * 3,
]
RAG_PROMPT = (
    "Use the following pieces of context to answer the question at the end. If you don't "
    "know the answer, just say that you don't know, don't try to make up an answer.\n\n"
    + "\n\n".join(DOCS)
    + "\n\nQuestion: When did the harbour bridge open?\nHelpful Answer:"
)
RAG = {"model": "stub-model", "messages": [{"role": "user", "content": RAG_PROMPT}]}
TARGETS = ("direct", "baseline", "current")


def baseline_tree(rev: str, where: Path) -> Path:
    """A detached worktree of `rev` (removed by the caller)."""
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(where),
                    rev], check=True)  # fmt: skip
    return where


def serve(tree: Path, backend: str, port: int) -> subprocess.Popen:
    """`python -m proxy serve` from `tree`, importing that tree's packages; waits until
    its compressor has loaded."""
    return spawn_ragtrim([backend], port, {"PYTHONPATH": str(tree)}, cwd=tree)


def interleaved(clients: dict[str, Timed], body: dict, n: int) -> dict[str, list[float]]:
    raw = json.dumps(body).encode()
    times: dict[str, list[float]] = {name: [] for name in clients}
    for i in range(n + n // 10):
        order = list(clients) if i % 2 else list(reversed(clients))  # neither goes first always
        for name in order:
            elapsed = clients[name].total_ms(PATH, raw)
            if i >= n // 10:  # the first 10% warm every path
                times[name].append(elapsed)
    return times


def summarise(times: dict[str, list[float]], cpu: dict[str, float]) -> dict:
    direct = percentile(times["direct"], 50)
    added = {name: round(percentile(times[name], 50) - direct, 3) for name in TARGETS[1:]}
    p99 = {name: round(percentile(times[name], 99) - percentile(times["direct"], 99), 3)
           for name in TARGETS[1:]}  # fmt: skip
    return {
        "added_p50_ms": added,
        "added_p99_ms": p99,
        "cpu_ms_per_request": {name: round(cpu[name], 3) for name in TARGETS},
        "current_vs_baseline_added_p50": round(added["current"] / max(added["baseline"], 1e-3), 3),
        "current_vs_baseline_cpu": round(cpu["current"] / max(cpu["baseline"], 1e-3), 3),
        "direct_p50_ms": round(direct, 3),
    }


def measure(procs: dict, ports: dict, n: int) -> dict:
    clients = {name: Timed(ports[name]) for name in TARGETS}
    out = {}
    for label, body in (("plain", PLAIN), ("rag", RAG)):
        before = {name: cpu_ms(procs[name].pid) for name in TARGETS}
        times = interleaved(clients, body, n)
        sent = n + n // 10
        cpu = {name: (cpu_ms(procs[name].pid) - before[name]) / sent for name in TARGETS}
        out[label] = summarise(times, cpu)
    return out


def run(rev: str, n: int) -> dict:
    ports = {name: free_port() for name in TARGETS}
    backend = f"http://127.0.0.1:{ports['direct']}"
    procs: dict = {}
    with tempfile.TemporaryDirectory(prefix="ragtrim-baseline-") as tmp:
        tree = baseline_tree(rev, Path(tmp) / "tree")
        try:
            procs["direct"] = spawn([sys.executable, "-m", "tests.doubles.fast_stub", "--port",
                                     str(ports["direct"])], f"{backend}/health")  # fmt: skip
            procs["baseline"] = serve(tree, backend, ports["baseline"])
            procs["current"] = serve(ROOT, backend, ports["current"])
            return measure(procs, ports, n)
        finally:
            for proc in procs.values():
                stop(proc)
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                           check=False)  # fmt: skip


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="HEAD~1", help="the revision to compare with")
    parser.add_argument("--n", type=int, default=1500, help="requests per tree and body")
    args = parser.parse_args(argv)
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.baseline],
                         check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    result = {"baseline": rev, "current": head, "n": args.n, **run(rev, args.n)}
    write_result("overhead_paired", result)
    plain, rag = result["plain"], result["rag"]
    print(
        f"overhead_paired: {head} vs {rev}: added p50 plain {plain['added_p50_ms']['current']} vs "
        f"{plain['added_p50_ms']['baseline']} ms, rag {rag['added_p50_ms']['current']} vs "
        f"{rag['added_p50_ms']['baseline']} ms; cpu/req plain "
        f"{plain['cpu_ms_per_request']['current']} vs {plain['cpu_ms_per_request']['baseline']}; "
        f"current_vs_baseline_added_p50 plain {plain['current_vs_baseline_added_p50']}, "
        f"rag {rag['current_vs_baseline_added_p50']}"
    )
    return result


if __name__ == "__main__":
    main()
