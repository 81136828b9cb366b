"""Cited answers: context assembly, the confidence gate, offline and OpenAI answers."""
