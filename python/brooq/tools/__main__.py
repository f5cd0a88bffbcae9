"""`python -m brooq.tools`: the `brooq` command without its installed script."""

import sys

from brooq.tools.cli import main

sys.exit(main())
