"""Billing meters, meter events and their summaries (``/v1/billing/meters``, ``/v1/billing/meter_events``)."""
