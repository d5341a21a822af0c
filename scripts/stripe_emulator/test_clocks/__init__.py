"""Test clocks: the time the emulator's objects live in."""
