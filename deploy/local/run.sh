#!/usr/bin/env bash
# `make run`: start a local vLLM (SmolLM2-135M-Instruct on CPU) unless RAGTRIM_BACKENDS
# names real servers, then ragtrim in front of it. Ctrl-C stops both.
set -euo pipefail
port=${1:-8080}
vllm_port=${2:-8000}
mkdir -p .run
model=smollm2-135m-instruct
if [ -z "${RAGTRIM_BACKENDS:-}" ]; then
  echo "[run] starting vLLM ($model) on 127.0.0.1:$vllm_port — about a minute on CPU"
  .venv/bin/python -m deploy.local.vllm_server start --model ".models/$model" \
    --served-name "$model" --port "$vllm_port" --log .run/vllm.log --pid-file .run/vllm.pid
  trap '.venv/bin/python -m deploy.local.vllm_server stop --pid-file .run/vllm.pid' EXIT
  export RAGTRIM_BACKENDS="http://127.0.0.1:$vllm_port"
else
  model=$(curl -sf "${RAGTRIM_BACKENDS%%,*}/v1/models" | .venv/bin/python -c \
    'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])' || echo MODEL)
fi
cat <<MSG
[run] ragtrim on http://127.0.0.1:$port in front of $RAGTRIM_BACKENDS. Try:
  curl -s http://127.0.0.1:$port/v1/chat/completions -H 'content-type: application/json' \\
    -d '{"model": "$model", "messages": [{"role": "user", "content": "What is the capital of France?"}]}'
MSG
.venv/bin/ragtrim serve --host 127.0.0.1 --port "$port"
