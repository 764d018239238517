"""The headless core of specterm: oracle, stream store, analytics, export.

Nothing in this package imports textual; screens and the CLI sit on top of it.
"""
