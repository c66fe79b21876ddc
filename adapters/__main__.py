"""`python -m adapters`: the `judgecore` command, for an environment where the script is not on PATH."""

import sys

from adapters.cli import main

sys.exit(main())
