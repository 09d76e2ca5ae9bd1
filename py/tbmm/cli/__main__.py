"""`python -m tbmm.cli.root`: the `tbmm` command."""

import sys

from tbmm.cli.entry import main

sys.exit(main())
