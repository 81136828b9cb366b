"""Static Python analysis shared by features: parsed, never imported."""
