"""The backends and the loops that look after them.

Owns: the one record per replica and the pool (endpoint.py: in-flight, health, the gate's
laws, queue readings, hit totals, scrape cursor), health checks (health.py), DNS
discovery (discovery.py), warm-up replays (warmup.py) and the scrape of vLLM's prefill
metrics (scrape.py). May import gate/ (the laws a record holds), upstream/ (its transport
and error mapping) and the foundation modules; routing/ ranks these records and is above.
"""
