"""Ranking: the seed's BM25 score composition and optional dense fusion."""
