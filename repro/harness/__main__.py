"""`python -m repro.harness REQUEST.json`: run one LoadGen test in this process."""

import sys

from repro.harness.worker import main
from repro.lifeline import watch_from_environment

watch_from_environment()
sys.exit(main(sys.argv[1:]))
