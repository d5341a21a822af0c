"""Products and prices."""
