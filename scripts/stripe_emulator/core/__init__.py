"""The emulator's core: the store and Stripe's error, the HTTP edge every ``/v1`` request passes, lists,
``expand[]`` and the state file."""
