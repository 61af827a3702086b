"""vlp_lib: the library behind the vlp-book reproducibility book.

One direction of flow: data -> models -> losses -> cluster -> train -> eval -> runs/report.
"""

__version__ = "0.1.0"


def _import_tqdm_autonotebook_quietly() -> None:
    """sentence-transformers (the MiniLM teacher) and umap-learn import ``tqdm.autonotebook`` / ``tqdm.auto``. In a
    Jupyter kernel without ipywidgets that import warns "TqdmWarning: IProgress not found" (once per kernel, on
    every executed page) and falls back to tqdm's text bar, the one this library uses anyway. Importing it here
    first, with that one warning silenced, gives the same bar without the warning. With ipywidgets installed (widget
    bars in JupyterLab) nothing is done."""
    import importlib.util
    import warnings

    if importlib.util.find_spec("ipywidgets") is not None:
        return
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        try:
            import tqdm.autonotebook  # noqa: F401
        except ImportError:  # tqdm is a dependency; nothing to quieten without it
            pass


_import_tqdm_autonotebook_quietly()
