"""The static package model: what the package defines and exports."""
