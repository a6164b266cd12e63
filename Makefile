# PathBind: `make demo` runs the offline demo, `make test` runs every check (`make test-fast` a quick subset),
# `make docs` builds the documentation site, `make browser` installs the headless Chromium the site's tests drive,
# `make realtok` fetches the real tokenizer files some tests read.
# All set up .venv first.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(abspath $(VENV))/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check
OUT ?= out/demo
TINY_TASKS := pathbind_demo_yesno,pathbind_demo_grounding,pathbind_demo_faithfulness
# Offline by design: the demo and the tests never reach a model or dataset hub.
OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# Dependencies are reinstalled only when these files change.
DEPS_STAMP := $(VENV)/.deps-$(shell cat pyproject.toml Makefile | sha256sum | cut -c1-12)

# The tests run on pytest-xdist workers, one per core (at most 4), each on one BLAS/torch thread (tests/conftest.py);
# an idle worker takes tests queued for a busy one, so the long end-to-end runs do not leave a core idle at the end.
TEST_WORKERS ?= auto
PYTEST := $(OFFLINE) $(BIN)/pytest --numprocesses $(TEST_WORKERS) --maxprocesses 4 --dist worksteal --durations 15

# The index torch and torchvision come from. PyPI's Linux torch wheels carry the CUDA libraries (about 4 GB); a
# machine without a GPU can take the CPU builds: make demo TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
TORCH_INDEX_URL ?=
TORCH_INDEX := $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL))
# Everything the checks need: the tests, lmms-eval's own model wrappers (decord) and the docs site.
EXTRAS := test,lmms-wrappers,docs

.PHONY: demo test test-fast docs docs-figures browser realtok compat compat-transformers install lint clean

$(DEPS_STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip setuptools
	@# The pinned torch release lmms-eval 0.7.3's torchvision requires; a plain `torch` would pull a newer build.
	$(PIP) install --quiet $(TORCH_INDEX) torch==2.14.1 torchvision==0.29.1
	$(PIP) install --quiet '.[$(EXTRAS)]'
	rm -f $(VENV)/.deps-* && touch $@

# A regular (non-editable) install, as users get it from `pip install .`; tests run against it. PathBind's own
# build backend starts from an empty build/ (build_backend/clean_build.py); the example plugin's does not.
install: $(DEPS_STAMP)
	rm -rf examples/pathbind-example-plugin/build
	$(PIP) install --quiet --no-deps --no-build-isolation --force-reinstall . ./examples/pathbind-example-plugin

demo: install
	rm -rf $(OUT)
	$(OFFLINE) $(BIN)/lmms_eval --model pathbind_control --tasks pathbind_demo --output_path $(OUT)/pathbind_control --log_samples
	$(OFFLINE) $(BIN)/lmms_eval --model pathbind_blind --tasks pathbind_demo --output_path $(OUT)/pathbind_blind --log_samples
	@# The same two verdicts from a real transformer on the pathbind_hf path: trained on other synthetic images, and untrained.
	$(OFFLINE) $(BIN)/lmms_eval --model pathbind_tiny --tasks $(TINY_TASKS) --output_path $(OUT)/pathbind_tiny --log_samples
	$(OFFLINE) $(BIN)/lmms_eval --model pathbind_tiny_untrained --tasks $(TINY_TASKS) --output_path $(OUT)/pathbind_tiny_untrained --log_samples
	$(BIN)/pathbind summary $(OUT)
	$(OFFLINE) $(BIN)/pathbind report $(OUT)/pathbind_control $(OUT)/pathbind_blind $(OUT)/pathbind_tiny $(OUT)/pathbind_tiny_untrained --out $(OUT)/report

# The demo report's figures the docs site shows (docs/report.md), from `make demo`'s four runs: committed, so that
# `make docs` stays fast; rerun after a change to the report's figures or the demo.
DOCS_FIGURES := q_sweep_pathbind_demo_grounding overlays_pathbind_demo_grounding_success faithfulness
docs-figures: demo
	$(OFFLINE) $(BIN)/pathbind report $(OUT)/pathbind_control $(OUT)/pathbind_blind $(OUT)/pathbind_tiny \
		$(OUT)/pathbind_tiny_untrained --overlays 1 --out $(OUT)/docs-report
	mkdir -p docs/img/demo
	cp $(DOCS_FIGURES:%=$(OUT)/docs-report/figures/%.png) docs/img/demo/

lint: install
	$(BIN)/ruff check pathbind_autoload.py pathbind_conventions.py pathbind pathbind_tasks pathbind_models pathbind_metrics pathbind_analysis tests examples benchmarks build_backend docs
	@# The cache lives in the venv, which CI keeps between runs: a fresh clone re-checks only what changed.
	$(BIN)/mypy --cache-dir $(VENV)/.mypy_cache

# The pytest script (not `python -m pytest`) keeps the source tree off sys.path: tests use the installed package.
test: lint docs browser
	$(PYTEST) $(PYTEST_ARGS)

# Headless Chromium and its WebDriver, which the docs-site tests drive (tests/browser.py reads the same variables):
# the system's packages, installed when either is missing (as root, as CI runs; else install chromium and
# chromium-driver yourself, or name other binaries: make test PATHBIND_CHROMIUM=... PATHBIND_CHROMEDRIVER=...).
export PATHBIND_CHROMIUM ?= /usr/bin/chromium
export PATHBIND_CHROMEDRIVER ?= /usr/bin/chromedriver
browser:
	@test -x $(PATHBIND_CHROMIUM) -a -x $(PATHBIND_CHROMEDRIVER) || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver; }
	@$(PATHBIND_CHROMIUM) --version 2>/dev/null  # the Debian launcher script warns on stderr

# The documentation site (mkdocs.yml): --strict fails on a broken link, a missing page or any other warning. The
# CLI reference page is generated from the installed commands' argument parsers (docs/hooks.py).
SITE ?= out/site
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir $(abspath $(SITE))

# The real tokenizer, processor and chat-template files (no weights) of the checkpoints the tests' tiny models
# copy, from the hub at pinned revisions, checked against their sha256 (tests/realtok.py reads the same folder).
REALTOK_DIR ?= .cache/realtok
realtok: install
	$(BIN)/python tests/realtok.py fetch $(REALTOK_DIR)

# The inner loop: unit tests and one end-to-end run through lmms_eval; `make test` keeps every check.
test-fast: install
	$(PYTEST) -m "not slow or smoke" $(PYTEST_ARGS)

# The seam's tests and the demo end to end against the installed lmms-eval release, then against a checkout of
# lmms-eval's main branch put first on the path (git clone https://github.com/EvolvingLMMs-Lab/lmms-eval):
#   make compat LMMS_EVAL_SRC=../lmms-eval
COMPAT_TESTS := tests/core/test_seam.py tests/core/test_lmms_integration.py tests/tasks/test_demo_e2e.py \
	tests/models/test_use_cache.py
LMMS_EVAL_PATH = $(abspath $(LMMS_EVAL_SRC))
compat: install
	@test -d "$(LMMS_EVAL_SRC)/lmms_eval" || { echo "make compat LMMS_EVAL_SRC=<a checkout of lmms-eval (the folder holding lmms_eval/)>"; exit 2; }
	$(PYTEST) $(COMPAT_TESTS)
	cd / && PYTHONPATH=$(LMMS_EVAL_PATH) $(BIN)/python -c "import lmms_eval; assert lmms_eval.__file__.startswith('$(LMMS_EVAL_PATH)/'), lmms_eval.__file__; print('lmms-eval under test:', lmms_eval.__file__)"
	PYTHONPATH=$(LMMS_EVAL_PATH) $(PYTEST) $(COMPAT_TESTS)

# The model tests (every family's tiny checkpoint, the probe, sharded loading, the packaged tiny models end to end)
# against the oldest transformers release pyproject.toml declares, in a venv of its own: make compat-transformers
TRANSFORMERS_FLOOR := $(shell sed -n 's/^ *"transformers>=\([0-9.]*\),.*/\1/p' pyproject.toml)
FLOOR_VENV ?= .venv-transformers-$(TRANSFORMERS_FLOOR)
FLOOR_BIN := $(abspath $(FLOOR_VENV))/bin
MODEL_TESTS := tests/models tests/analysis/test_embed.py tests/core/test_lmms_wrappers.py \
	tests/core/test_capabilities.py tests/tasks/test_faithfulness_e2e.py
compat-transformers:
	@test -n "$(TRANSFORMERS_FLOOR)" || { echo "no transformers>=X lower bound found in pyproject.toml"; exit 2; }
	test -x $(FLOOR_BIN)/python || $(PYTHON) -m venv $(FLOOR_VENV)
	$(FLOOR_BIN)/python -m pip --disable-pip-version-check install --quiet --upgrade pip setuptools
	$(FLOOR_BIN)/python -m pip --disable-pip-version-check install --quiet $(TORCH_INDEX) torch==2.14.1 torchvision==0.29.1
	@# One resolve with the floor pinned: tokenizers and huggingface-hub come in the releases it accepts.
	$(FLOOR_BIN)/python -m pip --disable-pip-version-check install --quiet '.[test,lmms-wrappers]' \
		./examples/pathbind-example-plugin 'transformers==$(TRANSFORMERS_FLOOR)'
	cd / && $(FLOOR_BIN)/python -c "import transformers as t; from packaging.version import Version as V; \
		assert V(t.__version__) == V('$(TRANSFORMERS_FLOOR)'), t.__version__; print('transformers', t.__version__)"
	$(OFFLINE) $(FLOOR_BIN)/pytest --numprocesses $(TEST_WORKERS) --maxprocesses 4 --dist worksteal --durations 15 \
		$(MODEL_TESTS) $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .venv-transformers-* out build *.egg-info
