"""users.pm_exp_month, users.pm_exp_year: the expiry of the card on file

CommitPaymentMethod mirrors it with brand and last four, so a renewal can tell the user that the
card will expire before it pays again (the card_expiring notification).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 10:00:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.add_column(sa.Column('pm_exp_month', sa.SmallInteger(), nullable=True))
        batch_op.add_column(sa.Column('pm_exp_year', sa.SmallInteger(), nullable=True))


def downgrade():
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_column('pm_exp_year')
        batch_op.drop_column('pm_exp_month')
