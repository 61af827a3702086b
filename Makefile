# vlp-book: two commands on a fresh machine.
#   make book   create/update .venv, execute every notebook (papermill), build the HTML book
#   make test   create/update .venv, run the test suite
# Options: SCALE=smoke|laptop|paper (notebook scale for `make book`), PYTHON=python3.11

PYTHON ?= python3
SCALE ?= laptop
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXECUTED := book/executed
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
# jupyter-book/sphinx warnings are errors: a failing notebook or a broken reference fails the build
JB_FLAGS := -W -n --keep-going

.PHONY: venv test notebooks book bench lab clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (vlp-book)" >/dev/null
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q --durations=10

notebooks: $(STAMP)
	mkdir -p $(EXECUTED)
	@for nb in $(NOTEBOOKS); do \
		echo "== $$nb (scale=$(SCALE))"; \
		start=$$(date +%s); \
		$(BIN)/papermill $$nb $(EXECUTED)/$$(basename $$nb) -k python3 -p scale $(SCALE) --cwd notebooks \
			|| exit 1; \
		echo "   $$(( $$(date +%s) - start )) s"; \
	done

book: notebooks
	$(BIN)/jupyter-book build . $(JB_FLAGS)
	@echo "book: _build/html/index.html"

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/

clean:
	rm -rf _build $(EXECUTED)
