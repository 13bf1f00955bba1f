"""No blind cuts (issue 33), at the compressor level: the default compressor
(fast_extractive) on issue 33's fidelity cases (fidelity_cases.py), alone and behind the
compress stage's verbatim partition (compressors/verbatim.py), at a keep rate of 0.3.

Before the fix: Thai, Lao, Khmer, Myanmar and emoji text was cut with nothing to judge it
by (the needle dropped), table rows were cut at sentence ends inside cells, and JSON
arrays came out invalid.
"""

import pytest

from compressors import ApproxTokenCounter, Budget, FastExtractiveCompressor
from compressors.verbatim import merge, partition
from tests.support.fidelity_cases import CASES, check_case

BUDGET = Budget(rate=0.3)


@pytest.fixture(scope="module")
def fast(static_model):
    return FastExtractiveCompressor(ApproxTokenCounter(), model_path=static_model)


@pytest.mark.parametrize("name", sorted(CASES))
def test_behind_the_verbatim_partition(fast, name):
    case = CASES[name]
    docs = list(case.documents)
    chosen = partition(docs)
    result = fast.compress([docs[i] for i in chosen], question=case.question, budget=BUDGET)
    out = merge(docs, chosen, [d.text for d in result.documents])
    check_case(case, "\n\n".join(out))


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_compressor_alone(fast, name):
    """Without the partition (a compressor may be called directly): what the scorer
    cannot judge is kept, and tables and JSON are cut only whole."""
    case = CASES[name]
    result = fast.compress(list(case.documents), question=case.question, budget=BUDGET)
    check_case(case, "\n\n".join(d.text for d in result.documents))
