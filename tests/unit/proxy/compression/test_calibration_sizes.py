"""Start-up calibration at two sizes (proxy/compression/service.py `warm`, issue 43): the
law the gate prices cold jobs with gets a fixed part and a slope from the proxy's own
runs, so a 2k-token job is not priced at a 450-token job's ms per token."""

import asyncio
import time

import pytest

from cache.memo import ChunkMemo
from cache.store import MemoryStore
from compressors import CompressionResult, DocumentResult
from proxy.backends.endpoint import EndpointPool
from proxy.compression.engine import CompressionEngine
from proxy.compression.service import CompressionService
from proxy.gate.decide import CostGate
from proxy.metrics import Metrics
from proxy.settings import CompressionLimitSettings


class Linear:
    """Costs `fixed_s` a job and `per_word_s` a word; keeps every other word."""

    name, version, question_aware, prior_ms_per_1k = "linear", "1", False, 1.0

    def __init__(self, fixed_s: float, per_word_s: float):
        self.fixed_s, self.per_word_s, self.sizes = fixed_s, per_word_s, []

    def fingerprint(self) -> str:
        return "linear:v1"

    def compress(self, documents, *, question, budget) -> CompressionResult:
        words = sum(len(d.split()) for d in documents)
        self.sizes.append(words)
        time.sleep(self.fixed_s + self.per_word_s * words)
        out = [DocumentResult(" ".join(d.split()[::2]), len(d.split()), len(d.split()[::2]))
               for d in documents]  # fmt: skip
        return CompressionResult(self.name, tuple(out))


def service_for(compressor) -> CompressionService:
    engine = CompressionEngine(compressor, ChunkMemo(MemoryStore()), timeout=30, workers=1)
    gate = CostGate("auto", prior_ms_per_1k=1.0, min_context_tokens=0, max_added_ms=1e4,
                    pool=EndpointPool())  # fmt: skip
    return CompressionService(engine, gate, Metrics(), False, CompressionLimitSettings())


def test_the_law_gets_its_fixed_part_and_slope_from_two_sizes():
    compressor = Linear(fixed_s=0.010, per_word_s=0.00002)  # 10 ms + 20 µs a word
    service = service_for(compressor)
    asyncio.run(service.warm(0))
    small, wide = compressor.sizes[-2:]
    assert wide >= 3.5 * small  # the second run: four copies of the workload
    law = service.gate.calibrated
    assert law.fixed_ms == pytest.approx(10.0, abs=4.0)  # one size alone gave no fixed part
    assert law.per_token == pytest.approx(0.02, rel=0.5)
    service.engine.close()


def test_no_wide_run_where_one_run_is_dear():
    compressor = Linear(fixed_s=0.08, per_word_s=0.0)  # 80 ms a run: LLMLingua on a CPU
    service = service_for(compressor)
    asyncio.run(service.warm(0))
    assert len(compressor.sizes) == 2  # the warm-up job and the one calibration
    service.engine.close()
