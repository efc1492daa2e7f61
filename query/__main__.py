from query.cli import main

raise SystemExit(main())
