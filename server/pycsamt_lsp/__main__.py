"""``python -m pycsamt_lsp``: the same entry point as the console script.

Guarded so that worker processes started with the ``spawn`` method, which
import the parent's main module, do not start a second CLI or server.
``run`` ends the process once the command is done (see :func:`pycsamt_lsp.cli.run`).
"""

from pycsamt_lsp.cli import run

if __name__ == "__main__":
    run()
