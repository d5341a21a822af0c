"""the change a Stripe subscription schedule will make at the period's end, as Stripe reports it (CONTRACT "Plan changes at the period's end")

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28 21:40:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0022'
down_revision = '0021'
branch_labels = None
depends_on = None


def upgrade():
    # The subscription's Stripe schedule as last read from Stripe: {"schedule", "ours", "price", "quantity", "at"}
    # (``app.billing.schedules``); null without one. Not written by the subscription's own events.
    op.add_column('subscriptions', sa.Column('scheduled_change', sa.JSON(), nullable=True))


def downgrade():
    op.drop_column('subscriptions', 'scheduled_change')
