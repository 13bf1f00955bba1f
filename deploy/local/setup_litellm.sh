#!/usr/bin/env bash
# Build .venv-litellm: LiteLLM's proxy (PyPI) in its own venv, for the LiteLLM-in-front
# integration test and bench.litellm (issue 31). Its own venv because litellm[proxy]
# pins its own fastapi, uvicorn, openai and pydantic. Idempotent: a stamp newer than
# this script means done; otherwise pip skips what is satisfied.
# Usage: deploy/local/setup_litellm.sh [VENV_DIR]   (default .venv-litellm)
set -euo pipefail
venv=${1:-${RAGTRIM_LITELLM_VENV:-.venv-litellm}}
py=${PYTHON:-python3.11}
command -v "$py" >/dev/null || py=python3
# The newest whose [proxy] pins (litellm-proxy-extras 0.4.110, litellm-enterprise
# 0.1.79.post1) the package index serves; 1.108.8+ pin builds it does not have.
version=1.108.7
stamp="$venv/.litellm-setup"
if [ -f "$stamp" ] && [ "$stamp" -nt "$0" ] && [ -x "$venv/bin/litellm" ]; then
  echo "[litellm] $venv up to date"; exit 0
fi
echo "[litellm] building $venv (litellm[proxy]==$version)"
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q "litellm[proxy]==$version"
# The bundled cost map: without this LiteLLM fetches one from the internet on import.
LITELLM_LOCAL_MODEL_COST_MAP=True "$venv/bin/python" -c 'import litellm.proxy.proxy_server'
touch "$stamp"
echo "[litellm] $venv ready"
