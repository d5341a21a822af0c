"""the billing mode of each subscription, flexible or classic (CONTRACT "Changes to the fifth round": credits never exceed what was paid)

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28 21:40:00.000000

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('subscriptions', sa.Column('billing_mode', sa.String(length=16), nullable=True))
    # Every subscription made before this revision was created with billing_mode[type]=classic.
    op.execute("UPDATE subscriptions SET billing_mode = 'classic'")


def downgrade():
    op.drop_column('subscriptions', 'billing_mode')
