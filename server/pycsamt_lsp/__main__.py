"""``python -m pycsamt_lsp``: the same entry point as the console script.

Guarded so that worker processes started with the ``spawn`` method, which
import the parent's main module, do not start a second CLI or server (nor
import the CLI at all). ``run`` ends the process once the command is done
(see :func:`pycsamt_lsp.cli.run`).

For ``serve`` (how editors start the server), the dataclass and namedtuple
part of the start's code cache is installed before the CLI is imported:
the methods the CLI's and the server's own dataclasses generate (~70
``exec`` of generated source, 4-5 ms of a warm start; issue 18) then come
from the cache file like those of the modules imported later
(:func:`pycsamt_lsp.lsp.codecache.early_code_cache`).
"""

import sys

if __name__ == "__main__":
    early = None
    if sys.argv[1:2] == ["serve"]:
        from pycsamt_lsp.lsp.codecache import early_code_cache

        early = early_code_cache()
    from pycsamt_lsp.cli import run

    run(code_cache=early)
