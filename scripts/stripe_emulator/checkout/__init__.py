"""Checkout Sessions in ``subscription`` mode and their hosted page."""
