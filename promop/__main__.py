from promop.cli import main

raise SystemExit(main())
