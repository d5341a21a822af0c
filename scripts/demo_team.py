"""``make demo``'s team story (CONTRACT "Organisations"): an organisation billed per seat, its seats
following its members. Uses the ``Demo``'s helpers (calls, the Maildir, its own test clock)."""
import secrets

PASSWORD = "demo password 1"


def team_story(demo):
    """Create, invite, accept from the Maildir link, subscribe per seat, a member joins and pays the
    prorated seat, one leaves."""
    suffix = secrets.token_hex(3)
    olga, max_, nina = (f"{name}-{suffix}@example.com" for name in ("olga", "max", "nina"))
    tokens = {}

    def sign_up(email):
        credentials = {"email": email, "password": PASSWORD}
        demo.call("POST", "/auth/register", 201, json=credentials)
        verification = demo.link_token(email, "Verify your email address")
        demo.call("POST", "/auth/email/verify", 200, json={"token": verification})
        tokens[email] = demo.call("POST", "/auth/login", 200, json=credentials)["access_token"]
        acting(email)

    def acting(email):
        demo.http.headers["Authorization"] = f"Bearer {tokens[email]}"

    def invite_and_accept(email):
        acting(olga)
        demo.call("POST", f"{base}/invitations", 201, json={"email": email})
        token = demo.link_token(email, "You are invited to join Acme")
        sign_up(email)
        return demo.call("POST", "/organizations/invitations/accept", 200, json={"token": token})

    demo.step(f"Teams: {olga} signs up and creates the organisation Acme (she owns it)")
    sign_up(olga)
    base = "/organizations/" + demo.call("POST", "/organizations", 201, json={"name": "Acme"})["id"]
    demo.step(f"She invites {max_}; he accepts from the emailed link (no subscription yet: he joins freely)")
    invite_and_accept(max_)
    demo.step("Olga subscribes Acme per seat: the quantity is its member count, 2")
    acting(olga)
    intent = demo.call("POST", f"{base}/subscription/intent", 201, json={"price": demo.prices["basic"]})
    subscription_id = intent["subscription"]["id"]
    demo.on_own_clock(subscription_id)
    secret = intent["client_secret"].split("_secret_")[0]
    if secret.startswith("seti_"):
        demo.stripe.v1.setup_intents.confirm(secret, params={"payment_method": "pm_card_visa"})
        demo.step("The trial ends at the provider: Stripe charges the 2 seats")
        demo.until("the organisation's plan is basic", lambda: seats(demo, base)["plan"] == "basic")
        demo.advance_to(demo.stripe.v1.subscriptions.retrieve(subscription_id).trial_end)
    else:
        demo.stripe.v1.payment_intents.confirm(secret, params={"payment_method": "pm_card_visa"})
    demo.until("the subscription is active", lambda: demo.stripe.v1.subscriptions.retrieve(subscription_id).status
               == "active" and seats(demo, base)["plan"] == "basic")
    demo.step(f"{nina} is invited and accepts: her seat is charged first, prorated, then she is a member")
    joined = invite_and_accept(nina)
    invoice = demo.stripe.v1.invoices.retrieve(demo.stripe.v1.subscriptions.retrieve(subscription_id).latest_invoice)
    print(f"    seats {joined['seats']}; the seat's invoice: {invoice.amount_paid / 100:.2f} "
          f"{invoice.currency.upper()} ({invoice.status})")
    demo.step(f"{max_} leaves: one seat fewer at Stripe (credited per PROVIDER_PRORATION)")
    acting(max_)
    demo.call("DELETE", f"{base}/members/{demo.me()['id']}", 204)
    acting(olga)
    demo.call("GET", base, 200)
    quantity = demo.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data[0].quantity
    print(f"    Stripe's quantity: {quantity}")


def seats(demo, base):
    return demo.http.get(demo.base + base, timeout=30).json()
