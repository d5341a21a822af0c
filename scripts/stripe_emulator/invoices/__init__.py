"""Invoices: listing, paying, previews."""
