"""Which files make the corpus: discovery, walking, fingerprints, profiles."""
