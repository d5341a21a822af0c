"""service_keys: the credentials of the client app's servers; usage_events: the usage ledger the
delivery worker sends to Stripe's meter events (CONTRACT "Additions (fifth round)": "Usage-based billing")

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-25 17:11:12.042350

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('service_keys',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('token', sa.String(length=64), nullable=False),
    sa.Column('abilities', sa.JSON(), nullable=False),
    sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_service_keys')),
    sa.UniqueConstraint('token', name=op.f('uq_service_keys_token')),
    sqlite_autoincrement=True
    )
    op.create_table('usage_events',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('identifier', sa.String(length=100), nullable=False),
    sa.Column('event_name', sa.String(length=100), nullable=False),
    sa.Column('customer', sa.String(length=255), nullable=False),
    sa.Column('value', sa.BigInteger(), nullable=False),
    sa.Column('timestamp', sa.BigInteger(), nullable=False),
    sa.Column('service_key_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_error', sa.String(length=1000), nullable=True),
    sa.Column('delivered_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['service_key_id'], ['service_keys.id'], name=op.f('fk_usage_events_service_key_id_service_keys'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_usage_events')),
    sa.UniqueConstraint('identifier', name=op.f('uq_usage_events_identifier')),
    sqlite_autoincrement=True
    )
    with op.batch_alter_table('usage_events', schema=None) as batch_op:
        batch_op.create_index('ix_usage_events_customer', ['customer', 'status'], unique=False)
        batch_op.create_index('ix_usage_events_due', ['status', 'next_attempt_at'], unique=False)



def downgrade():
    with op.batch_alter_table('usage_events', schema=None) as batch_op:
        batch_op.drop_index('ix_usage_events_due')
        batch_op.drop_index('ix_usage_events_customer')

    op.drop_table('usage_events')
    op.drop_table('service_keys')
