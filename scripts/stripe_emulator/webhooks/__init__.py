"""Webhook endpoints, events and their signed delivery."""
