"""The compression service: everything between "compress these documents" and the
compressors of the top-level `compressors/` library.

Owns: the engine (engine.py: memo, worker threads, deadlines; its result, outcome.py),
the seen-document feature path (features.py), the prefix-cache-aware choice of what to
send (stable.py over cache_view.py), the compressor's re-measurement (recalibration.py),
the caps of `compression.limits` (limits.py), POST /v1/compress (ingest.py), the token
counter (token_counter.py) and the composition helper (parts.py). May import gate/,
backends/, prompt/, the foundation modules, `compressors/` and `cache/`; never stages/,
routing/ or anything above.
"""
