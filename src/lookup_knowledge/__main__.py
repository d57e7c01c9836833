from lookup_knowledge.cli import main

raise SystemExit(main())
