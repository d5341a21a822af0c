"""Password hashing with Argon2id (argon2-cffi), parameters from ``PASSWORD_HASH_*`` config."""
from functools import lru_cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from flask import current_app


@lru_cache(maxsize=4)
def _hasher(time_cost, memory_cost):
    return PasswordHasher(time_cost=time_cost, memory_cost=memory_cost)


@lru_cache(maxsize=4)
def _dummy_hash(time_cost, memory_cost):
    return _hasher(time_cost, memory_cost).hash("dummy password used to equalise timing")


def _params():
    return current_app.config["PASSWORD_HASH_TIME_COST"], current_app.config["PASSWORD_HASH_MEMORY_COST"]


def hash_password(password):
    """Return the Argon2id hash string of ``password``."""
    return _hasher(*_params()).hash(password)


def verify_password(password_hash, password):
    """Return whether ``password`` matches ``password_hash``.

    With ``password_hash=None`` (no such user) a dummy hash is verified instead, so an unknown
    email costs the same time as a wrong password (CONTRACT: "in similar time").
    """
    params = _params()
    try:
        return _hasher(*params).verify(password_hash or _dummy_hash(*params), password) and password_hash is not None
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(password_hash):
    """Return whether the hash was made with other parameters than the configured ones."""
    return _hasher(*_params()).check_needs_rehash(password_hash)
