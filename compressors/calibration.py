"""One fixed calibration workload: a compressor measured on this machine, not a prior.

Written for this project (no data set at run time): four short documents of ordinary
expository prose with numbers, names and a date, ~450 tokens in all, and one question.
Long enough that a forward pass dominates the timing, short enough that measuring costs
well under a second on a GPU and a few seconds on a CPU. Two users, one workload:
- `precision="auto"` (_precision.py) times the precisions on it at load;
- the proxy's engine compresses it at start-up (proxy/compression/engine.py `calibrate`), so the
  cost gate's first decisions use this machine's cost instead of the compressor's
  prior, and again while the gate skips for cost (proxy/compression/recalibration.py). A
  failure only leaves the prior in place.
Why measure, and why one workload: docs/decisions/0011-compressor-cost-and-calibration.md.
"""

from __future__ import annotations

QUESTION = "When did the harbour bridge open, and how long is its main span?"

DOCUMENTS: tuple[str, ...] = (
    "The harbour bridge opened to traffic on 19 March 1932 after eight years of "
    "construction. Its main steel arch spans 503 metres, and the deck carries eight "
    "lanes of road traffic, two railway tracks, a footway and a cycleway. About 1,400 "
    "workers built it, and sixteen of them died during the works. The granite facing "
    "of its four pylons was quarried a few hundred kilometres to the south.",
    "River deltas form where a river slows down as it meets a larger body of water and "
    "drops the sediment it carries. Over centuries the deposits build new land, split "
    "the channel into many branches and push the coastline outwards. Dams upstream "
    "trap much of that sediment, which is why several large deltas are now shrinking "
    "rather than growing. Rising sea levels add to the loss of land at their edges.",
    "A sourdough starter is a culture of wild yeast and lactic acid bacteria kept in a "
    "mixture of flour and water. Bakers feed it every day or two by discarding part of "
    "it and adding fresh flour and water. The bacteria produce the acids that give the "
    "bread its sour taste, while the yeast produces the gas that makes the dough rise. "
    "A healthy starter roughly doubles in volume within eight hours of a feeding.",
    "The city's first public library lent books from a single room above the market "
    "hall. Within twenty years it had moved twice and held more than 40,000 volumes. "
    "Its reading room stayed open until ten in the evening so that people who worked "
    "long shifts could still use it. Today the old building houses the city archive, "
    "and the library itself occupies a glass-fronted hall beside the railway station.",
)


WIDE_COPIES = 4  # the second size: ~1,800 tokens
MAX_WIDE_MS = 200.0  # no wide run that would hold a worker longer (LLMLingua on a CPU)


def wide_pays(small_ms: float) -> bool:
    """Whether a run at WIDE_COPIES times the size stays within MAX_WIDE_MS, judged by
    one run at the base size."""
    return small_ms * WIDE_COPIES <= MAX_WIDE_MS


def workload(copies: int = 1) -> list[str]:
    """The documents, `copies` times over (each copy marked, so no two are the same
    text): a second size, so the cost law gets a slope and a fixed part from the
    proxy's own runs (proxy/gate/job_cost.py; why two sizes:
    docs/decisions/0011-compressor-cost-and-calibration.md)."""
    if copies <= 1:
        return list(DOCUMENTS)
    return [f"{doc} (Copy {k + 1}.)" for k in range(copies) for doc in DOCUMENTS]
