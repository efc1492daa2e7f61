import sys

from bench_lib.cli import main

sys.exit(main())
