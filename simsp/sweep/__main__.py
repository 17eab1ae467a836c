"""`python -m simsp.sweep sweep|compare ...`: the two commands without the rest of the CLI."""

import sys

from simsp.sweep.commands import main

sys.exit(main())
