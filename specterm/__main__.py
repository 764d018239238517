"""`python -m specterm ...`: the same command line as the `specterm` script (specterm.launch.main),
e.g. for `python -X importtime -m specterm open RUN` without an installed entry point."""

from specterm.launch import main

main()
