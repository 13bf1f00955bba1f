"""FeaturePath.fetch: a recurring set's feature keys are one analyses lookup, and find
what the keys made each time would."""

import asyncio

from cache.analysis import DocumentAnalyses, document_names
from cache.features import FeatureCache
from proxy.compression.features import FeaturePath


class Featured:
    def feature_fingerprint(self) -> str:
        return "fp"


DOCS = [f"document {i} " * 20 for i in range(6)]


def test_a_recurring_sets_keys_are_kept_and_find_the_same_features():
    async def scenario():
        cache, analyses = FeatureCache(None), DocumentAnalyses()
        names = document_names(None, "t", DOCS)
        await cache.put_many("fp", {names[i]: b"f%d" % i for i in (0, 2, 5)}, "t")
        kept = FeaturePath(Featured(), cache, analyses=analyses)
        plain = FeaturePath(Featured(), cache)
        expected = [b"f0", None, b"f2", None, None, b"f5"]
        assert await kept.fetch(DOCS, "t") == await plain.fetch(DOCS, "t") == expected
        misses = analyses.misses
        assert await kept.fetch(list(DOCS), "t") == expected and analyses.misses == misses
        assert await kept.fetch(DOCS, "u") == [None] * 6  # another tenant's keys

    asyncio.run(scenario())
