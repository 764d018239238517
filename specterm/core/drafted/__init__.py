"""Runs of drafters without a draft model (SPEC 2b): the block walk on L_s and m_s (walk.py), the
per-set statistics and the decision on this hardware (analysis.py), and their tables (export.py)."""
