"""entitlement_overrides.expiry_announced_at: when the app was told that an override's until passed (flask entitlements announce-expired)

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-29 07:00:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('entitlement_overrides', schema=None) as batch_op:
        batch_op.add_column(sa.Column('expiry_announced_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index('ix_entitlement_overrides_until', ['until'], unique=False)


def downgrade():
    with op.batch_alter_table('entitlement_overrides', schema=None) as batch_op:
        batch_op.drop_index('ix_entitlement_overrides_until')
        batch_op.drop_column('expiry_announced_at')
