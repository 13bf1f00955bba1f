"""The upstream side of ragtrim: one client stack per worker, one exchange per request
(driven by proxy/response/path.py, read by the response hooks).

transport.py  `Transport`: the one-method seam to an HTTP client (aiohttp by default);
              lower-layer errors are mapped into the ProxyError tree in one place
headers.py    which headers cross the proxy, as raw bytes
exchange.py   `Exchange`: in-flight slot, failover before the first byte, deadlines,
              chunk times (TTFT, TPOT), usage for the hooks — released in one place
answer.py     which backend answers are relayed and which become ragtrim's 502
resources.py  errors that are ragtrim's own (EMFILE...), never a backend's
"""
