"""failed_webhook_events: provider events whose processing failed, for the operator and replay

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22 10:00:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'failed_webhook_events',
        sa.Column('id', sa.String(length=255), nullable=False),
        sa.Column('type', sa.String(length=255), nullable=False),
        sa.Column('customer', sa.String(length=255), nullable=True),
        sa.Column('payload', sa.Text(), nullable=False),
        sa.Column('error_class', sa.String(length=255), nullable=False),
        sa.Column('error_message', sa.Text(), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('first_failed_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('last_failed_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('resolved_at', sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_failed_webhook_events')),
    )
    with op.batch_alter_table('failed_webhook_events', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_failed_webhook_events_resolved_at'), ['resolved_at'], unique=False)


def downgrade():
    with op.batch_alter_table('failed_webhook_events', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_failed_webhook_events_resolved_at'))
    op.drop_table('failed_webhook_events')
