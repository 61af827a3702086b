"""One module per paper objective; docstrings cite the paper's equations."""
