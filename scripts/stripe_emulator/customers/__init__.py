"""Customers and their PaymentMethods."""
