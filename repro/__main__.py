"""`python -m repro` runs the command-line interface."""

from repro._entry import main

main()
