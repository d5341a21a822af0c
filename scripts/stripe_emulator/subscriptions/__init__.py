"""Subscriptions: creation, changes and prorations, trials, dunning, renewals."""
