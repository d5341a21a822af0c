"""SetupIntents and PaymentIntents."""
