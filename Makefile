# vlp-book: two commands on a fresh machine.
#   make book   create/update .venv, then build the HTML book from the shipped release (release/: executed pages and
#               their run records; trains nothing), executing the notebooks (papermill) only where there is no
#               release or EXECUTE=1 asks for it
#   make test   create/update .venv, run the test suite (quick tier, the notebooks at smoke scale beside it)
# Options: EXECUTE=1 (re-make the pages of CHAPTERS, or of every chapter), SCALE=smoke|laptop|paper (notebook scale
#   when executing), PYTHON=python3.11, CHAPTERS="iclip" (chapters or notebooks, see vlp_lib/book/pages.py CHAPTERS;
#   default: all; the other pages come from the release, keep their last build, or show "not built yet").
#   `make verify CHAPTERS=iclip`: re-make chapters from empty caches in a scratch store and compare with the release
#   (SHIP=1, maintainers: a re-make without a difference is shipped, re-stamping the release for code that changed
#   no number);
#   `make release CHAPTERS=iclip` (maintainers): ship book/executed and the store's current records into release/.
#   `make test-quick`: the checks and the tests without notebooks; `make lint`: ruff and mypy only;
#   `make test-paper`: one step of every method at the papers' models (RN50 / ViT-B-32, 224 px) on the CPU;
#   `make test-real`: every chapter notebook at smoke scale on the committed real pairs.

PYTHON ?= python3
SCALE ?= laptop
CHAPTERS ?=
EXECUTE ?=
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXECUTED := book/executed
# jupyter-book/sphinx warnings are errors: a failing notebook or a broken reference fails the build
JB_FLAGS := -W -n --keep-going
# executing or verifying the real-drawings chapter (every chapter when CHAPTERS is empty) builds its data first (once:
# a built size is returned as it is)
DRAWINGS_DATA := $(if $(or $(filter drawings,$(CHAPTERS)),$(if $(CHAPTERS),,all)),openclipart,)

.PHONY: venv test test-quick test-paper test-real lint notebooks book release repage restore verify bench lab clean openclipart

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (vlp-book)" >/dev/null
	@# WordNet 3.0 (Debian's wordnet-base, unpacked into the environment, .venv/share, without root) for iCLIP's definitions on real class
	@# data; without apt the rest of the book still installs, and iCLIP on real data names this command
	$(BIN)/python -m vlp_lib.papers.iclip.wordnet fetch || echo "warning: WordNet not installed (iCLIP's definitions on real class data need it): $(BIN)/python -m vlp_lib.papers.iclip.wordnet fetch"
	touch $(STAMP)

# every tier but the paper-scale steps (`make test-paper`) and the chapters' notebooks on real pairs beyond a page of each
# paper but PyramidCLIP (`make test-real`); lint (mypy: one core for about 20 s) runs beside the
# tests' collection and first tests instead of before them, its output printed after theirs; either failing fails
test: $(STAMP)
	@log=$$(mktemp); $(MAKE) --no-print-directory lint > $$log 2>&1 & lint=$$!; \
	$(BIN)/python -m pytest -q --durations=10 -m "not paper_scale and not real_pairs"; tests=$$?; \
	wait $$lint; linted=$$?; echo "== lint (ruff, mypy), run beside the tests: exit $$linted"; cat $$log; rm -f $$log; \
	[ $$tests -eq 0 ] && [ $$linted -eq 0 ]

# every chapter notebook at smoke scale on the committed real pairs (tests/data/openclipart) and an image-folder task
test-real: $(STAMP)
	$(BIN)/python -m pytest -q --durations=0 -k runs_on_real_pairs tests/test_notebooks.py

# the quick tier: the checks, then everything but executing the notebooks (pytest marker `notebooks`) and the
# paper-scale steps
test-quick: lint $(STAMP)
	$(BIN)/python -m pytest -q --durations=10 -m "not notebooks and not paper_scale"

# the paper-scale tier (pytest marker `paper_scale`): one step of every method at RN50 / ViT-B-32 and 224 px on the
# CPU, through the trainer, and the evaluation suite on a handful of 224 px images; each test's time printed
test-paper: $(STAMP)
	$(BIN)/python -m pytest -q --durations=0 -m paper_scale

# ruff (lint + format) and mypy, configured in pyproject.toml: a few seconds
lint: $(STAMP)
	$(BIN)/ruff check vlp_lib tests benchmarks
	$(BIN)/ruff format --check vlp_lib tests benchmarks
	$(BIN)/mypy

# papermill into $(EXECUTED)/, then each executed notebook is cleaned for the page (vlp_lib/book/build.py:
# no progress bars or tqdm warnings, papermill's injected cell hidden); prints each notebook's time and the total
notebooks: $(STAMP) $(DRAWINGS_DATA)
	$(BIN)/python -m vlp_lib.book.build execute --scale $(SCALE) $(CHAPTERS)

book: $(STAMP)
	@if [ "$(EXECUTE)" = "1" ] || [ ! -f release/manifest.json ]; then $(MAKE) --no-print-directory notebooks; fi
	$(BIN)/python -m vlp_lib.book.release install
	$(BIN)/python -m vlp_lib.book.build placeholders
	@start=$$(date +%s); $(BIN)/jupyter-book build . $(JB_FLAGS) \
		&& echo "jupyter-book build: $$(( $$(date +%s) - start )) s"
	@$(BIN)/python -m vlp_lib.book.build times
	@echo "book: _build/html/index.html"

release: $(STAMP)
	$(BIN)/python -m vlp_lib.book.release make --scale $(SCALE) $(CHAPTERS)
	$(BIN)/python -m vlp_lib.book.release check --partial
	$(BIN)/python -m vlp_lib.book.findings write

# (both: the README's, the introduction's and the chapters' opening pages' findings written again from the release's
# scorecard, vlp_lib/book/findings.py)
# chapters' pages executed again from the release's own records and shipped (their prose, tables or figures changed,
# their runs did not): re-makes nothing, keeps the chapters' records and minutes (make repage CHAPTERS=drawings; a
# single page: CHAPTERS=protoclip_benchmark)
repage: $(STAMP)
	$(BIN)/python -m vlp_lib.book.release repage $(CHAPTERS)
	$(BIN)/python -m vlp_lib.book.release check --partial
	$(BIN)/python -m vlp_lib.book.findings write

# the release's records into results/ (kept records stay): notebooks opened in JupyterLab and chapters re-executed
# load the shipped runs instead of training them
restore: $(STAMP)
	$(BIN)/python -m vlp_lib.book.release restore

verify: $(STAMP) $(DRAWINGS_DATA)
	$(BIN)/python -m vlp_lib.book.release verify $(if $(SHIP),--ship) $(CHAPTERS)
	@if [ -n "$(SHIP)" ]; then $(BIN)/python -m vlp_lib.book.release check --partial && $(BIN)/python -m vlp_lib.book.findings write; fi

# Open Clip Art's drawings (Debian's openclipart-svg, pinned) rendered once into data/openclipart/<size>px: the
# real-drawings chapter's pairs and tasks (vlp_lib/data/openclipart.py)
openclipart: $(STAMP)
	$(BIN)/python -m vlp_lib.data.openclipart --size 32 64


bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/

clean:
	rm -rf _build $(EXECUTED)
