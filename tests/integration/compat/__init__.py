"""Issue 31's API-compatibility corpus: request shapes written from vLLM's documented API,
sent to vLLM and through ragtrim (tests/integration/test_api_compat.py)."""
