"""The command registry and the command handlers (LSP and CLI share them)."""
