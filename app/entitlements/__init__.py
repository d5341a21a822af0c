"""Entitlements: which features a billable's plan grants, and a quota ledger of how much is left (CONTRACT
"Additions (sixth round)", "Entitlements"). The blueprint is ``app.entitlements.views.blp``."""
