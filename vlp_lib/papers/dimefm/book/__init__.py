"""The dimefm chapter's book side: run tables, claims as data and the paper's numbers (outside the code fingerprint:
it plans runs and presents them, never computes a stored number)."""
