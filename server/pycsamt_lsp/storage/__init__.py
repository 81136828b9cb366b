"""Writing index files safely."""
