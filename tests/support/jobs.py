"""A compression job's Outcome (proxy/outcome/job.py) with the defaults the gate tests
need: a cold job over 4 documents, no wait, nothing of it the question's."""

from proxy.outcome.job import Outcome


def job(tokens_before: int, ms: float = 0.0, *, hits: int = 0, misses: int = 4,
        **fields) -> Outcome:  # fmt: skip
    return Outcome((), tokens_before, 0, hits, misses, ms, **fields)
