"""pycsamt-lsp: a grounded, offline technical memory of a Python package for editors."""

__version__ = "0.1.0"
INDEX_VERSION = 2  # 2: chunk texts hold no credential values (issue 19)
