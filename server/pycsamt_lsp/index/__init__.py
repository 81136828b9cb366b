"""The lexical index: tokenizer, numpy BM25 with incremental updates, persistence."""
