"""Keeping CPython's collector off what lives as long as the process.

A full (generation 2) collection walks every tracked object, on the event loop, while
every stream waits. What a built app holds is frozen once the app is built. Loads
after that add as much again: a tokenizer (transformers imports its modules lazily) or
a compressor, so each is frozen after it too.
Why, with measurements: docs/decisions/0021-bounded-work-per-request.md.

`settle()` runs in a served process only (workers.run_one; a test that builds an app in
its own process keeps its heap as it is): once the app is built, and as the app's
`on_loaded` hook (proxy/components.py) after each such load. The young generations are
collected first, so the load's temporary garbage is not frozen with it; then everything
alive moves to the permanent generation (gc.freeze,
https://docs.python.org/3/library/gc.html#gc.freeze), which no collection walks.
Requests in flight at that moment are frozen too: reference counting still frees them,
only a cycle among them would never be collected. So it runs once per load, never per
request or per health flap.
"""

from __future__ import annotations

import gc


def settle() -> None:
    gc.collect(1)
    gc.freeze()
