"""Listeners on ``webhook_handled``; ``create_app`` imports each module so its receivers connect."""
