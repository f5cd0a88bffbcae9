import sys

from bench.main import main

sys.exit(main())
