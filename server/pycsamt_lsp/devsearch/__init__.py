"""Live, bounded developer search over the checkout's source."""
