"""What test modules share, by topic; a test module imports helpers only from here (tests/test_test_layout.py).

Fixtures stay in the conftest files; fixtures only some modules use (``prices`` of five plans, the metered
``live_config``) live here and are imported by those modules.
"""
