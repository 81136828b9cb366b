"""Editor features beyond commands: diagnostics, code actions, hover, completion.

Each feature module registers its handlers on the shared server when imported.
"""

from pycsamt_lsp.lsp import diagnostics  # noqa: E402,F401
from pycsamt_lsp.lsp import hover as hover  # noqa: F401 - hover, completion, definition, symbols
