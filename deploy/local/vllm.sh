#!/usr/bin/env bash
# Local models and a real vLLM (CPU) for dev, tests and the demo. Run from the repo root.
#   deploy/local/vllm.sh models                 build .models/tiny-llama and SmolLM2 (idempotent)
#   deploy/local/vllm.sh start [MODEL] [PORT]   default .models/tiny-llama 8101; waits for /health
#   deploy/local/vllm.sh stop [PORT]            stop the one started on PORT
#   deploy/local/vllm.sh status [PORT]
# The served model name is the model folder's name (tiny-llama, smollm2-135m-instruct) unless
# VLLM_SERVED_NAME is set. Logs and PID files go to $RAGTRIM_RUN_DIR (default .run).
# Venvs: RAGTRIM_VENV (.venv, builds the models), RAGTRIM_VLLM_VENV (.venv-vllm, runs vLLM).
set -euo pipefail
export HF_HUB_OFFLINE=1
run_dir=${RAGTRIM_RUN_DIR:-.run}
venv=${RAGTRIM_VENV:-.venv}
cmd=${1:-}
shift || true

build_models() {
  "$venv/bin/python" -m deploy.local.build_tiny_llama --out .models/tiny-llama
  "$venv/bin/python" -m deploy.local.build_smollm2 --out .models/smollm2-135m-instruct
}

case "$cmd" in
  models)
    build_models
    ;;
  start)
    model=${1:-.models/tiny-llama}
    port=${2:-8101}
    if [ -f "$run_dir/vllm-$port.pid" ] && curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1
    then
      echo "vLLM already running on 127.0.0.1:$port (pid $(cat "$run_dir/vllm-$port.pid"))"; exit 0
    fi
    if [ ! -f "$model/config.json" ] && [ "$model" = .models/tiny-llama ]; then
      "$venv/bin/python" -m deploy.local.build_tiny_llama --out "$model"
    fi
    python3 -m deploy.local.vllm_server start --model "$model" --port "$port" \
      --served-name "${VLLM_SERVED_NAME:-$(basename "$model")}" \
      --venv "${RAGTRIM_VLLM_VENV:-.venv-vllm}" \
      --log "$run_dir/vllm-$port.log" --pid-file "$run_dir/vllm-$port.pid"
    ;;
  stop)
    python3 -m deploy.local.vllm_server stop --pid-file "$run_dir/vllm-${1:-8101}.pid"
    ;;
  status)
    port=${1:-8101}
    if curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
      echo "vLLM on 127.0.0.1:$port is healthy (pid $(cat "$run_dir/vllm-$port.pid" 2>/dev/null))"
    else
      echo "no healthy vLLM on 127.0.0.1:$port"; exit 1
    fi
    ;;
  *)
    sed -n '2,9p' "$0"; exit 2
    ;;
esac
