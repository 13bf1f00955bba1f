"""Test doubles for the compressor contract and the upstream Transport seam (unit tests
only)."""

import time
from collections.abc import Sequence

from compressors import Budget, CompressionResult, DocumentResult


class HalfWords:
    """Keeps the first `rate` share of each document's words; counts words as tokens."""

    name, version, question_aware = "halfwords", "1", False
    prior_ms_per_1k = 1.0  # a word split: about free

    def __init__(self, delay: float = 0.0, fail: bool = False):
        self.delay, self.fail, self.calls = delay, fail, 0

    def fingerprint(self) -> str:
        return "halfwords:v1"

    def compress(
        self, documents: Sequence[str], *, question: str, budget: Budget
    ) -> CompressionResult:
        self.calls += 1
        time.sleep(self.delay)
        if self.fail:
            raise RuntimeError("compressor exploded")
        out = []
        for doc in documents:
            words = doc.split()
            kept = words[: max(1, round(len(words) * budget.rate))]
            out.append(DocumentResult(" ".join(kept), len(words), len(kept)))
        return CompressionResult(self.name, tuple(out))


class Reply:
    """An UpstreamResponse of the Transport seam (proxy/upstream/transport.py)."""

    def __init__(self, status: int, body: bytes):
        self.status, self.headers, self.body = status, [], body
        self.released = self.aborted = False

    async def chunks(self):
        yield self.body

    async def read(self) -> bytes:
        return self.body

    def release(self) -> None:
        self.released = True

    def abort(self) -> None:
        self.aborted = True


class HandlerTransport:
    """A Transport whose answers come from `handler(method, url, headers, body)`, an
    async function returning (status, body bytes) or raising; every call is recorded."""

    def __init__(self, handler):
        self.handler, self.calls = handler, []

    async def send(self, method, url, headers, body):
        self.calls.append((method, url, headers, body))
        status, data = await self.handler(method, url, headers, body)
        return Reply(status, data)

    async def aclose(self) -> None:
        pass


class Pooled(HalfWords):
    """Question-aware: records the budget it was given."""

    name, question_aware = "pooled", True

    def compress(self, documents, *, question, budget):
        self.budgets = getattr(self, "budgets", []) + [budget]
        return super().compress(documents, question=question, budget=budget)
