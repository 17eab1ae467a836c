"""`python -m simsp ...`: the CLI without installing the console script (e.g. on a bare GPU
image)."""

import sys

from simsp.cli.main import main

sys.exit(main())
