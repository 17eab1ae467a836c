"""`python -m simsp.cli ...`: the same as `python -m simsp ...`."""

import sys

from simsp.cli.main import main

sys.exit(main())
