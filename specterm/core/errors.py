"""One exception type for mistakes a person can make (bad path, corrupt file, mismatched models)."""


class SpectermError(Exception):
    """An error whose message is one sentence that says what to do; the CLI prints it without a traceback."""
