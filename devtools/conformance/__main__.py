from conformance_lib.cli import main

raise SystemExit(main())
