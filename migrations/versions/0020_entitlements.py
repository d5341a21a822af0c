"""entitlements: the quota ledger per billable, feature and period, consumes by identifier, reservations and support overrides (CONTRACT "Additions (sixth round)", "Entitlements")

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-28 21:40:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def _owner_columns():
    return [
        sa.Column('billable', sa.String(length=80), nullable=False),
        sa.Column('user_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
        sa.Column('organization_id', sa.String(length=32), nullable=True),
    ]


def _owner_keys(table):
    return [
        sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f(f'fk_{table}_user_id_users'), ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['organization_id'], ['organizations.id'],
                                name=op.f(f'fk_{table}_organization_id_organizations'), ondelete='CASCADE'),
    ]


def _owner_indexes(table):
    with op.batch_alter_table(table, schema=None) as batch_op:
        batch_op.create_index(batch_op.f(f'ix_{table}_organization_id'), ['organization_id'], unique=False)
        batch_op.create_index(batch_op.f(f'ix_{table}_user_id'), ['user_id'], unique=False)


def upgrade():
    op.create_table('entitlement_balances',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('feature', sa.String(length=64), nullable=False),
    sa.Column('period', sa.String(length=32), nullable=False),
    sa.Column('reset_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('used', sa.BigInteger(), nullable=False),
    sa.Column('reserved', sa.BigInteger(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    *_owner_columns(),
    *_owner_keys('entitlement_balances'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_entitlement_balances')),
    sa.UniqueConstraint('billable', 'feature', 'period', name=op.f('uq_entitlement_balances_billable')),
    sqlite_autoincrement=True
    )
    _owner_indexes('entitlement_balances')
    op.create_table('entitlement_consumes',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('identifier', sa.String(length=100), nullable=False),
    sa.Column('feature', sa.String(length=64), nullable=False),
    sa.Column('required', sa.BigInteger(), nullable=False),
    sa.Column('consumed', sa.BigInteger(), nullable=False),
    sa.Column('balance_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('answer', sa.JSON(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    *_owner_columns(),
    *_owner_keys('entitlement_consumes'),
    sa.ForeignKeyConstraint(['balance_id'], ['entitlement_balances.id'],
                            name=op.f('fk_entitlement_consumes_balance_id_entitlement_balances'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_entitlement_consumes')),
    sa.UniqueConstraint('identifier', name=op.f('uq_entitlement_consumes_identifier')),
    sqlite_autoincrement=True
    )
    _owner_indexes('entitlement_consumes')
    with op.batch_alter_table('entitlement_consumes', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_entitlement_consumes_balance_id'), ['balance_id'], unique=False)
        batch_op.create_index('ix_entitlement_consumes_created_at', ['created_at'], unique=False)
    op.create_table('entitlement_reservations',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('identifier', sa.String(length=100), nullable=False),
    sa.Column('feature', sa.String(length=64), nullable=False),
    sa.Column('balance_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('amount', sa.BigInteger(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('settled', sa.BigInteger(), nullable=True),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    *_owner_columns(),
    *_owner_keys('entitlement_reservations'),
    sa.ForeignKeyConstraint(['balance_id'], ['entitlement_balances.id'],
                            name=op.f('fk_entitlement_reservations_balance_id_entitlement_balances'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_entitlement_reservations')),
    sa.UniqueConstraint('identifier', name=op.f('uq_entitlement_reservations_identifier'))
    )
    _owner_indexes('entitlement_reservations')
    with op.batch_alter_table('entitlement_reservations', schema=None) as batch_op:
        batch_op.create_index('ix_entitlement_reservations_due', ['balance_id', 'status', 'expires_at'], unique=False)
    op.create_table('entitlement_overrides',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('feature', sa.String(length=64), nullable=False),
    sa.Column('enabled', sa.Boolean(), nullable=True),
    sa.Column('limit', sa.BigInteger(), nullable=True),
    sa.Column('until', sa.DateTime(timezone=True), nullable=True),
    sa.Column('reason', sa.String(length=500), nullable=False),
    sa.Column('granted_by', sa.String(length=255), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('revoked_by', sa.String(length=255), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    *_owner_columns(),
    *_owner_keys('entitlement_overrides'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_entitlement_overrides')),
    sqlite_autoincrement=True
    )
    _owner_indexes('entitlement_overrides')
    with op.batch_alter_table('entitlement_overrides', schema=None) as batch_op:
        batch_op.create_index('ix_entitlement_overrides_billable', ['billable', 'feature'], unique=False)


def downgrade():
    for table in ('entitlement_overrides', 'entitlement_reservations', 'entitlement_consumes', 'entitlement_balances'):
        op.drop_table(table)
