# ragtrim — the two commands: `make run` and `make test` (see README).
SHELL := /bin/bash
PY       := .venv/bin/python
VLLM_PY  := .venv-vllm/bin/python
MODELS   := .models
PORT     ?= 8080
VLLM_PORT ?= 8000
RUN_DIR  := .run
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TIKTOKEN_CACHE_DIR := $(CURDIR)/.cache/tiktoken

.PHONY: setup setup-ragtrim setup-vllm setup-tools setup-litellm setup-system setup-bench models run stop test test-unit test-integration test-clients lint format bench help

help:
	@echo "make run    set up everything, start local vLLM (SmolLM2) + ragtrim on :$(PORT)"
	@echo "make test   set up everything, run ruff + unit + integration tests"
	@echo "make test-unit | test-integration | test-clients | lint | format | bench | setup | stop"

setup: setup-ragtrim setup-vllm setup-tools setup-litellm models

setup-ragtrim:
	@deploy/local/setup_ragtrim.sh .venv

setup-vllm:
	@deploy/local/setup_vllm.sh .venv-vllm

# kubectl (kustomize), kubernetes-validate, checkov for tests/deploy: own venv, own pins
setup-tools:
	@deploy/k8s/setup_tools.sh .venv-tools

# LiteLLM's proxy, for the LiteLLM-in-front test and bench.litellm: own venv, own pins
setup-litellm:
	@deploy/local/setup_litellm.sh .venv-litellm

models: setup-ragtrim
	@$(PY) -m deploy.local.build_tiny_llama --out $(MODELS)/tiny-llama
	@$(PY) -m deploy.local.build_smollm2 --out $(MODELS)/smollm2-135m-instruct
	@$(PY) -m deploy.local.build_lingua_standin --out $(MODELS)/lingua2-standin-bert-base-multilingual-cased
	@$(PY) -m deploy.local.build_lingua_standin --encoder-from minilm --out $(MODELS)/lingua2-standin-minilm-bert-base-multilingual-cased
	@$(PY) -m deploy.local.build_static_minilm
	@$(PY) -c "from compressors import ensure_tiktoken_cache as e; e('$(TIKTOKEN_CACHE_DIR)')"

lint:
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format:
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

test-unit: setup-ragtrim
	$(PY) -m pytest -q tests/unit

test-integration: setup
	$(PY) -m pytest -q tests/integration

# real LangChain / LlamaIndex / Haystack / openai clients through ragtrim and vLLM;
# figures in $${RAGTRIM_CLIENTS_REPORT:-/tmp/ragtrim-clients-report.json}
test-clients: setup
	$(PY) -m pytest -q tests/unit/proxy/prompt/segment/test_template_drift.py tests/integration/clients \
		tests/integration/test_readme_snippets.py

# dnsmasq and a local Redis (deploy/local/setup_system.sh): the suite runs whole on a
# fresh machine, not only under .ci/run
setup-system:
	@deploy/local/setup_system.sh

test: setup setup-system lint
	$(PY) -m pytest -q tests

run: setup
	@deploy/local/run.sh $(PORT) $(VLLM_PORT)

stop:
	-@$(PY) -m deploy.local.vllm_server stop --pid-file $(RUN_DIR)/vllm.pid

BENCHES := overhead overhead_paired compress_cost path_cost fidelity prefix_routing ttft ttft_sim routes_ttft followups fleet load soak abuse litellm

# bench.overhead measures nginx beside ragtrim: Debian's nginx-light, installed once.
setup-bench:
	@command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light)

bench: setup setup-bench
	@for b in $(BENCHES); do echo "== bench.$$b"; $(PY) -m bench.$$b || exit 1; done
