# Two commands matter: `make demo` and `make test`. Both set up .venv first.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.hir-setup-stamp
TORCH_PIN := torch==2.14.1
FBGEMM_CPU := fbgemm-gpu-cpu==1.9.0
# MovieLens-100K ships inside recbole; only its data files are read (never imported)
RECBOLE := recbole==1.2.0
DEMO_OUT ?= demo_out

.PHONY: setup demo test test-slow lint pytest docs bench clean

setup: $(STAMP)

# torchrec pulls fbgemm-gpu, whose library needs the NVIDIA driver; on a machine without
# one it is swapped for the CPU build (same import name) so torchrec imports.
$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install --quiet --disable-pip-version-check $(TORCH_PIN)
	$(PIP) install --quiet --disable-pip-version-check -e '.[dev]' $(TORCH_PIN)
	$(PIP) install --quiet --disable-pip-version-check --no-deps $(RECBOLE)
	if nvidia-smi -L >/dev/null 2>&1; then \
		echo "setup: NVIDIA GPU present, keeping fbgemm-gpu"; \
	else \
		$(PIP) uninstall --quiet -y fbgemm-gpu; \
		$(PIP) install --quiet --disable-pip-version-check --no-deps --force-reinstall $(FBGEMM_CPU); \
	fi
	$(PY) -c "import torch, torchrec; print('setup: torch', torch.__version__, '| torchrec', torchrec.__version__)"
	touch $(STAMP)

demo: setup
	$(VENV)/bin/hir demo --out $(DEMO_OUT) --overwrite

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# two workers (pytest-xdist), one per core of the 2-core CI machine: most tests run one
# Python thread. Whole files go to one worker, so a module's fixtures are built once.
PYTEST_WORKERS ?= 2
pytest: setup
	$(VENV)/bin/pytest -n $(PYTEST_WORKERS) --dist loadfile

docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

test: setup lint pytest docs

# the end-to-end tests marked slow, left out of `make test` to keep it short
test-slow: setup
	$(VENV)/bin/pytest -m slow

# Each script prints its side-by-side ratios; add --record benchmarks/results/FILE.md to keep them.
bench: setup
	$(PY) benchmarks/graph_build.py
	$(PY) benchmarks/sampler_throughput.py
	$(PY) benchmarks/loader_pipeline.py
	$(PY) benchmarks/attention.py
	$(PY) benchmarks/train_quality.py --content

clean:
	rm -rf site build $(DEMO_OUT) .pytest_cache .ruff_cache
