"""Coupons, promotion codes and the discounts they make."""
