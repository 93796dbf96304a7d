"""`python -m repro` runs the command-line interface."""

from repro.cli import main

main()
