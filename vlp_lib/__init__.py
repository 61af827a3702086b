"""vlp_lib: the library behind the vlp-book reproducibility book.

One direction of flow: data -> models -> losses -> cluster -> train -> eval -> runs/report.
"""

__version__ = "0.1.0"
