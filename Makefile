# Two commands matter: `make demo` and `make test`. Both set up .venv first.
VENV ?= .venv
PY := $(VENV)/bin/python
UV := $(VENV)/bin/uv
STAMP := $(VENV)/.hir-setup-stamp
# uv installs the wheels in parallel: the set-up takes well under a minute where pip's
# serial unpacking took about six
UV_PIN := uv==0.13.9
# With an NVIDIA GPU: the CUDA build of torch and the fbgemm-gpu that torchrec asks for.
# Without one: the CPU build of torch and fbgemm-gpu-cpu (same import name; fbgemm-gpu's
# library needs the NVIDIA driver), with the torchrec release made for that torch.
GPU_PINS := torch==2.14.1
CPU_PINS := torch==2.13.0 torchrec==1.8.0 fbgemm-gpu-cpu==1.8.0
# MovieLens-100K ships inside recbole; only its data files are read (never imported)
RECBOLE := recbole==1.2.0
DEMO_OUT ?= demo_out
# the quick world by default; DEMO_ARGS='--scale small' is the full run
DEMO_ARGS ?=

.PHONY: setup demo test test-slow lint pytest docs bench clean

setup: $(STAMP)

# uv reads no pip configuration: a machine's local wheel folder (PIP_FIND_LINKS) is passed
# on, so that a CPU build of torch kept there is used instead of a download.
$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check $(UV_PIN)
	if nvidia-smi -L >/dev/null 2>&1; then \
		echo "setup: NVIDIA GPU present, CUDA build of torch"; \
		$(UV) pip install --quiet --python $(PY) -e '.[dev]' $(GPU_PINS); \
	else \
		echo 'fbgemm-gpu; sys_platform == "never"' > $(VENV)/no-fbgemm-gpu.txt; \
		$(UV) pip install --quiet --python $(PY) $(addprefix --find-links ,$(PIP_FIND_LINKS)) \
			--override $(VENV)/no-fbgemm-gpu.txt -e '.[dev]' $(CPU_PINS); \
	fi
	$(UV) pip install --quiet --python $(PY) --no-deps $(RECBOLE)
	$(PY) -c "import torch, torchrec; print('setup: torch', torch.__version__, '| torchrec', torchrec.__version__)"
	touch $(STAMP)

demo: setup
	$(VENV)/bin/hir demo --out $(DEMO_OUT) --overwrite $(DEMO_ARGS)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# two workers (pytest-xdist), one per core of the 2-core CI machine: most tests run one
# Python thread. Whole files go to one worker, so a module's fixtures are built once;
# modules marked `long` go first (tests/conftest.py), not the ones with the most tests.
PYTEST_WORKERS ?= 2
pytest: setup
	$(VENV)/bin/pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

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
