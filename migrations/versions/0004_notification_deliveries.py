"""notification_deliveries: the transactional outbox of notifications, one row per channel

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 10:00:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'notification_deliveries',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('notification_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('channel', sa.String(length=16), nullable=False),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('last_error', sa.String(length=1000), nullable=True),
        sa.Column('delivered_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['notification_id'], ['notifications.id'],
                                name=op.f('fk_notification_deliveries_notification_id_notifications'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_notification_deliveries')),
        sa.UniqueConstraint('notification_id', 'channel', name=op.f('uq_notification_deliveries_notification_id')),
        sqlite_autoincrement=True,
    )
    op.create_index('ix_notification_deliveries_due', 'notification_deliveries', ['status', 'next_attempt_at'])


def downgrade():
    op.drop_index('ix_notification_deliveries_due', table_name='notification_deliveries')
    op.drop_table('notification_deliveries')
