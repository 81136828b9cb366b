"""``python -m pycsamt_lsp.routing FILE... --registry-root ROOT``: routing accuracy."""

from pycsamt_lsp.routing.score import main

raise SystemExit(main())
