from devtools.corpus.cli import main

raise SystemExit(main())
