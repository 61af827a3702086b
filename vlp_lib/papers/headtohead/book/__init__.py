"""The head-to-head chapter's book side: its runs, the equal-seconds calibration and its claims (``chapter``)."""
