"""seat changes sent to Stripe, recorded with Stripe's answer; seats held by a declined invitation (CONTRACT "Changes to the fifth round")

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-28 21:40:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('seat_changes',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('organization_id', sa.String(length=32), nullable=False),
    sa.Column('provider_subscription', sa.String(length=255), nullable=False),
    sa.Column('reason', sa.String(length=16), nullable=False),
    sa.Column('previous_quantity', sa.Integer(), nullable=False),
    sa.Column('quantity', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('invoice', sa.String(length=255), nullable=True),
    sa.Column('user_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('role', sa.String(length=16), nullable=True),
    sa.Column('invitation_id', sa.String(length=32), nullable=True),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('resolved_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['organization_id'], ['organizations.id'], name=op.f('fk_seat_changes_organization_id_organizations'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_seat_changes_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_seat_changes'))
    )
    with op.batch_alter_table('seat_changes', schema=None) as batch_op:
        batch_op.create_index('ix_seat_changes_organization_status', ['organization_id', 'status'], unique=False)
        batch_op.create_index(batch_op.f('ix_seat_changes_invoice'), ['invoice'], unique=False)


def downgrade():
    with op.batch_alter_table('seat_changes', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_seat_changes_invoice'))
        batch_op.drop_index('ix_seat_changes_organization_status')

    op.drop_table('seat_changes')
