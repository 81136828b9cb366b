"""Retrieval evaluation on JSONL suites."""
