"""The book side of vlp_lib: tables and verdict rules (``report``), figures (``plots``), what pages say about
themselves (``pages``) and the build of the book from the notebooks (``build``). Nothing here computes a run's
numbers, so it is outside the code fingerprint (``vlp_lib.runs.code_fingerprint``): editing a table's format or a
figure never recomputes a stored run."""
