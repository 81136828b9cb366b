"""Text concepts shared by every feature: identifiers, markup, secrets."""
