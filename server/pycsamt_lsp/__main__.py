"""``python -m pycsamt_lsp``: the same entry point as the console script."""

from .cli import main

raise SystemExit(main())
