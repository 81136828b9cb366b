"""The language-server adapter (pygls). Engine code never imports this package."""
