"""Reusable pieces of the app: the token stream view, plots, tables, the progress panel."""
