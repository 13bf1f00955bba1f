"""fast_extractive times the question's part of a call apart (issue 33): the proxy learns
a job's cost from the documents' part only, so a giant question teaches no price."""

import time

import pytest

from compressors import Budget, FastExtractiveCompressor
from compressors.tokens import ApproxTokenCounter

DOCS = [
    " ".join(f"Plant {i} raised its output by {i % 9 + 1} percent last quarter." for i in
             range(25)),
    " ".join(f"The river {i} floods the valley every {i + 2} years." for i in range(25)),
]  # fmt: skip


@pytest.fixture(scope="module")
def compressor(static_model):
    return FastExtractiveCompressor(ApproxTokenCounter(), model_path=static_model).load()


def test_a_giant_questions_time_is_reported_as_the_questions(compressor):
    giant = " ".join(f"what about word{i} and river{i % 100}" for i in range(4000))
    compressor.compress(DOCS, question="warm up?", budget=Budget(0.5))
    began = time.perf_counter()
    result = compressor.compress(DOCS, question=giant, budget=Budget(0.5))
    total_ms = (time.perf_counter() - began) * 1000
    assert 0 < result.question_ms <= total_ms
    small = compressor.compress(DOCS, question="Which plant grew most?", budget=Budget(0.5))
    assert result.question_ms > 10 * small.question_ms  # it grows with the question
    assert total_ms - result.question_ms < 0.5 * total_ms  # the documents' part is the rest


def test_the_time_is_no_part_of_the_output(compressor):
    one = compressor.compress(DOCS, question="Which plant?", budget=Budget(0.5))
    two = compressor.compress(DOCS, question="Which plant?", budget=Budget(0.5))
    assert (
        one == two and compressor.compress(DOCS, question="", budget=Budget(0.5)).question_ms == 0
    )
