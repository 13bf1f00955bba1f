"""Local vLLM on CPU: start/stop (vllm_server) and the model builders (build_*), imported
as `deploy.local.<name>` and run as `python -m deploy.local.<name>` from the repo root."""
