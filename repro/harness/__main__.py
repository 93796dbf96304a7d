"""`python -m repro.harness REQUEST.json`: run one LoadGen test in this process."""

import sys

from repro.harness.worker import main

sys.exit(main(sys.argv[1:]))
