from pipeline.corpus.cli import main

raise SystemExit(main())
