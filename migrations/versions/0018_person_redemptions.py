"""once per person: promotion-code redemptions and trials kept by the acting person and the card fingerprint (CONTRACT "Changes to the fifth round")

trial_redeemers: the people (address hashes) who started a subscription, for any billable. Promotion
redemptions keep their table: a person's and a card's keys are rows of it like an account's.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28 21:40:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'trial_redeemers',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('redeemer', sa.String(length=64), nullable=False),
        sa.Column('provider_subscription', sa.String(length=255), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_trial_redeemers')),
        sa.UniqueConstraint('redeemer', name=op.f('uq_trial_redeemers_redeemer')),
        sqlite_autoincrement=True,
    )


def downgrade():
    op.drop_table('trial_redeemers')
