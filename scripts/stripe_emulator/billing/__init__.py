"""Billing steps shared by the resource families above: periods, test cards, invoices and charging them.

Nothing here imports a resource family; they import it.
"""
