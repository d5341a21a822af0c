"""catalog_version: the version of the plan catalogue, moved by product.* and price.* webhooks;
subscriptions.discount: Stripe's discount of the subscription

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24 21:30:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade():
    # No row yet: the first webhook inserts it (an upsert), and a missing row reads as version 0.
    op.create_table(
        'catalog_version',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('version', sa.BigInteger(), nullable=False),
        sa.Column('changed_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_catalog_version')),
    )
    with op.batch_alter_table('subscriptions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('discount', sa.JSON(), nullable=True))
    op.create_table(
        'promotion_redemptions',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('user_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('promotion_code', sa.String(length=255), nullable=False),
        sa.Column('provider_subscription', sa.String(length=255), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_promotion_redemptions_user_id_users'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_promotion_redemptions')),
        sa.UniqueConstraint('user_id', 'promotion_code', name=op.f('uq_promotion_redemptions_user_id')),
        sqlite_autoincrement=True,
    )


def downgrade():
    op.drop_table('promotion_redemptions')
    with op.batch_alter_table('subscriptions', schema=None) as batch_op:
        batch_op.drop_column('discount')
    op.drop_table('catalog_version')
