"""Errors of credentials, tokens and accounts: who the caller is and what their token may do (RFC 6750)."""

from app.errors.base import AppError, Conflict


class InvalidCredentials(AppError):
    status = 401
    code = "invalid_credentials"
    message = "The email or password is incorrect."


class WrongPassword(InvalidCredentials):
    """403 ``invalid_credentials``: the ``current_password``/``password`` a bearer request confirms with is wrong.

    Not 401: the bearer token is good, and a 401 would tell the client to log in again.
    """

    status = 403
    message = "The password is incorrect."


class InvalidEmailToken(AppError):
    """A verification, email-change or reset token that cannot be used, whatever the reason.

    Malformed, tampered, expired, used, or for an account that no longer exists: one code and one
    sentence, so the answer tells a guesser nothing about which.
    """

    status = 400
    code = "invalid_token"
    message = "The link is invalid or has expired; ask for a new one."


class EmailUnverified(AppError):
    status = 403
    code = "email_unverified"
    message = "Verify your email address first (POST /auth/email/verification sends the link again)."


class Unauthenticated(AppError):
    """401 with an RFC 6750 ``WWW-Authenticate`` challenge (section 3)."""

    status = 401
    code = "unauthenticated"
    message = "A valid bearer token is required."

    @classmethod
    def missing_token(cls):
        # RFC 6750 3.1: a request without credentials gets no error code in the challenge.
        return cls(headers={"WWW-Authenticate": 'Bearer realm="api"'})

    @classmethod
    def invalid_token(cls, reason):
        challenge = f'Bearer realm="api", error="invalid_token", error_description="{reason}"'
        return cls(f"The bearer token is invalid: {reason}.", headers={"WWW-Authenticate": challenge})


class TokenReused(Unauthenticated):
    """A token already rotated out by refresh came back after the grace window: its family was revoked.

    A distinct class because the revocation must be committed although the request fails.
    """

    @classmethod
    def detected(cls):
        challenge = 'Bearer realm="api", error="invalid_token", error_description="token reuse detected"'
        return cls("The bearer token was already rotated out by a refresh; every token of its refresh chain "
                   "is now revoked. Log in again.", headers={"WWW-Authenticate": challenge})


class InsufficientScope(AppError):
    """403 with an RFC 6750 ``insufficient_scope`` challenge (section 3.1): the token lacks an ability."""

    status = 403
    code = "insufficient_scope"

    @classmethod
    def for_ability(cls, ability):
        return cls(f"The bearer token lacks the ability {ability!r}.", details={"ability": ability},
                   headers={"WWW-Authenticate": f'Bearer error="insufficient_scope", scope="{ability}"'})


class TooManyTokens(Conflict):
    code = "too_many_tokens"

    @classmethod
    def over_limit(cls, limit):
        return cls(f"A user may hold at most {limit} live tokens (AUTH_MAX_TOKENS_PER_USER); revoke one first.",
                   details={"limit": limit})


class EmailTaken(Conflict):
    code = "email_taken"
    message = "An account with this email already exists."

    @classmethod
    def yours(cls):
        return cls("This is already your address.")


class AlreadyVerified(Conflict):
    code = "already_verified"
    message = "Your email address is already verified."


class OrganizationsFollowEmail(Conflict):
    """409: an email change would move the Stripe customer email of more organisations than it moves at once
    (CONTRACT "Changes to the fifth round": "Bounded Stripe work")."""

    code = "organizations_follow_email"

    @classmethod
    def over(cls, ids, limit):
        return cls(f"More than {limit} of your organisations send their Stripe invoices to your address: give all "
                   f"but {limit} a billing email (PATCH /organizations/<id> with billing_email) first, before "
                   "changing your address.", details={"organizations": ids, "limit": limit})
