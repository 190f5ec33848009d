"""`python -m harness.cli ...`: the same as `onsite ...`."""

import sys

from harness.cli.main import main

sys.exit(main())
