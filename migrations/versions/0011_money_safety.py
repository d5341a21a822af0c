"""subscriptions.pending_*: Stripe's pending_update as written; subscriptions.test_clock; trial_fingerprints: the cards that had a free trial

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24 21:00:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('subscriptions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('pending_price', sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column('pending_quantity', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('pending_expires_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('test_clock', sa.String(length=255), nullable=True))
    op.create_table(
        'trial_fingerprints',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('fingerprint', sa.String(length=255), nullable=False),
        sa.Column('provider_subscription', sa.String(length=255), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_trial_fingerprints')),
        sa.UniqueConstraint('fingerprint', name=op.f('uq_trial_fingerprints_fingerprint')),
        sqlite_autoincrement=True,
    )


def downgrade():
    op.drop_table('trial_fingerprints')
    with op.batch_alter_table('subscriptions', schema=None) as batch_op:
        batch_op.drop_column('test_clock')
        batch_op.drop_column('pending_expires_at')
        batch_op.drop_column('pending_quantity')
        batch_op.drop_column('pending_price')
