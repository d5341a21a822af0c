"""subscriptions.default_payment_method: the method that pays the subscription now

CommitPaymentMethod promotes it instead of a late event's, so a replaced card never comes back.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21 14:46:46.463735

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('subscriptions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('default_payment_method', sa.String(length=255), nullable=True))


def downgrade():
    with op.batch_alter_table('subscriptions', schema=None) as batch_op:
        batch_op.drop_column('default_payment_method')
