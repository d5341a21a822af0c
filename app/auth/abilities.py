"""The fixed list of token abilities (CONTRACT "Additions (second round)") and the rule that grants them.

A login token (and every token refreshed from it) has the abilities ``[]``, which SPEC 2 gives every
token it describes and which means "may do everything". A personal access token made with
``POST /auth/tokens`` names at least one ability and may do only what it names.
"""

# Ability -> what it allows; the README's table and the OpenAPI descriptions come from the same words.
ABILITIES = {
    "profile:read": "GET /auth/me",
    "subscription:read": "GET /subscription, GET /subscription/swap/preview, GET /subscription/invoices, "
                         "GET /subscription/invoices/upcoming, GET /subscription/billing-details (each also under "
                         "/organizations/{organization_id}), GET /usage (also /organizations/{organization_id}/usage), "
                         "GET /entitlements (also /organizations/{organization_id}/entitlements)",
    "subscription:write": "POST /subscription/intent, POST /subscription/portal, POST /subscription/swap, "
                          "POST /subscription/cancel, POST /subscription/resume, POST /subscription/quantity, "
                          "POST /subscription/payment-method, POST /subscription/checkout, "
                          "PUT /subscription/billing-details, POST /subscription/tax-ids, "
                          "DELETE /subscription/tax-ids/{tax_id}, DELETE /subscription/scheduled-change (each but "
                          "quantity also under /organizations/{organization_id}, for its owner and admins)",
    "notifications:read": "GET /notifications",
    "tokens:manage": "GET /auth/tokens, POST /auth/tokens (abilities it has itself), DELETE /auth/tokens/{id}, "
                     "POST /auth/logout-all",
    "profile:write": "POST /auth/email/verification, POST /auth/password, PATCH /auth/me, POST /auth/email/change",
    "account:delete": "DELETE /auth/me",
    "organizations:read": "GET /organizations, GET /organizations/{organization_id}, "
                          "GET /organizations/{organization_id}/members, "
                          "GET /organizations/{organization_id}/invitations",
    "organizations:write": "POST /organizations, PATCH and DELETE /organizations/{organization_id}, PATCH and DELETE "
                           "/organizations/{organization_id}/members/{user_id}, "
                           "POST /organizations/{organization_id}/transfer, "
                           "POST /organizations/{organization_id}/invitations, "
                           "DELETE /organizations/{organization_id}/invitations/{invitation_id}, "
                           "POST /organizations/invitations/accept",
}


def grants(abilities, ability):
    """Return whether a token with ``abilities`` (its stored list) may use ``ability``; ``[]`` grants all."""
    return not abilities or ability in abilities
