from devtools.conformance.cli import main

raise SystemExit(main())
