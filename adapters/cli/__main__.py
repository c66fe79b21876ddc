"""`python -m adapters.cli`: the `judgecore` command."""

import sys

from adapters.cli import main

sys.exit(main())
