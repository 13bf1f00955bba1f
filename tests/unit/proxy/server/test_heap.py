"""settle(): the young garbage is collected, what is alive leaves the collector's walks.
Run in a child process: a freeze here would keep this test process's objects forever."""

from __future__ import annotations

import subprocess
import sys

CHILD = """
import gc, weakref
from proxy.server.heap import settle

class Node:
    pass

gc.collect()
alive = [[i] for i in range(5000)]  # a load's long-lived objects
a, b = Node(), Node()
a.other, b.other = b, a  # a load's temporary garbage: a cycle only the collector frees
gone = weakref.ref(a)
del a, b
settle()
print(gone() is None, gc.get_freeze_count() >= len(alive), gc.get_count()[2])
"""


def test_settle_collects_the_young_garbage_and_freezes_the_rest():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()  # fmt: skip
    assert out == ["True", "True", "0"]


async def test_the_app_reports_its_compressor_loaded_once_warm():
    from proxy.components import build
    from proxy.settings import Settings

    loads: list[int] = []
    parts = build(Settings(backends=["http://127.0.0.1:9"]), on_loaded=lambda: loads.append(1))
    await parts._warm_engine()
    assert loads == [1]
    parts.compression.engine.close()
