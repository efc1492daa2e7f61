import sys

from devtools.bench.cli import main

sys.exit(main())
