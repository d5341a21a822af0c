"""HTML pages Stripe hosts: the billing portal and the hosted invoice."""
