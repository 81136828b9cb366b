"""The facade: one object that holds the index snapshot and answers every request."""
