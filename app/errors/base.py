"""The base of the one error tree, ``AppError``, and the generic answers every feature gives (404, 409)."""


class AppError(Exception):
    """Base of every error the API answers on purpose: a ``code``, an HTTP ``status`` and a sentence."""

    status = 500
    code = "internal_error"
    message = "The server hit an unexpected error."

    def __init__(self, message=None, *, details=None, headers=None):
        super().__init__(message or self.message)
        self.message = message or self.message
        self.details = details
        self.headers = headers or {}


class NotFound(AppError):
    status = 404
    code = "not_found"
    message = "The requested resource does not exist."


class Conflict(AppError):
    status = 409
    code = "conflict"
    message = "The request conflicts with the current state."
