"""API cards of package symbols (hover, completion, context assembly)."""
