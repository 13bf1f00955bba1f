"""The cost gate and what it learns: whether compressing a context pays back in prefill.

Owns: the decision (decide.py), a compression job's cost law (job_cost.py), a backend's
prefill law and queue (prefill_law.py; the laws live on each backend's record), the
context's token estimate (token_estimate.py) and the per-tenant, ageing samples they all
learn from (learning.py). Imports nothing else of the proxy: the records it reads are
named by protocols (prefill_law.py `LawPool`), so backends/ sits above it.
"""
