#!/usr/bin/env bash
# Build .venv-tools (kubectl with kustomize, kubernetes-validate, checkov) for the
# manifest tests. A separate venv: checkov pins many packages, and ragtrim's own .venv
# must keep its resolution. Idempotent: skipped while the stamp is newer than the pins.
set -euo pipefail
venv=${1:-.venv-tools}
reqs=deploy/k8s/tools-requirements.txt
py=${PYTHON:-python3.11}
command -v "$py" >/dev/null || py=python3
stamp="$venv/.ragtrim-tools"
if [ -f "$stamp" ] && [ "$stamp" -nt "$reqs" ]; then
  echo "[setup] $venv up to date"; exit 0
fi
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q -r "$reqs"
"$venv/bin/kubectl" version --client >/dev/null
touch "$stamp"
echo "[setup] $venv ready"
