"""The headless core, one sub-package per pipeline stage: store/, streams/, decide/, claims/, compare/, report/.

Nothing in this package imports textual, torch or llama_cpp; engines and the app sit on top of it.
"""
