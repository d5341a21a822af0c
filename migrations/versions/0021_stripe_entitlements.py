"""the Stripe Entitlements active features of each billable's customer, read from Stripe (CONTRACT "Entitlements")

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28 21:40:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('stripe_entitlements',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('billable', sa.String(length=80), nullable=False),
    sa.Column('user_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('organization_id', sa.String(length=32), nullable=True),
    sa.Column('lookup_keys', sa.JSON(), nullable=False),
    sa.Column('as_of', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['organization_id'], ['organizations.id'], name=op.f('fk_stripe_entitlements_organization_id_organizations'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_stripe_entitlements_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_stripe_entitlements')),
    sa.UniqueConstraint('billable', name=op.f('uq_stripe_entitlements_billable')),
    sqlite_autoincrement=True
    )
    with op.batch_alter_table('stripe_entitlements', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_stripe_entitlements_organization_id'), ['organization_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_stripe_entitlements_user_id'), ['user_id'], unique=False)


def downgrade():
    with op.batch_alter_table('stripe_entitlements', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_stripe_entitlements_user_id'))
        batch_op.drop_index(batch_op.f('ix_stripe_entitlements_organization_id'))

    op.drop_table('stripe_entitlements')
