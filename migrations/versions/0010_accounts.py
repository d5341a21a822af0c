"""accounts: users.email_verified_at, deleted_subscribers, password_reset_requests

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24 20:45:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.add_column(sa.Column('email_verified_at', sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        'deleted_subscribers',
        sa.Column('email_sha256', sa.String(length=64), nullable=False),
        sa.Column('deleted_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('email_sha256', name=op.f('pk_deleted_subscribers')),
    )
    op.create_table(
        'password_reset_requests',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('email', sa.String(length=320), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_password_reset_requests')),
        sqlite_autoincrement=True,
    )


def downgrade():
    op.drop_table('password_reset_requests')
    op.drop_table('deleted_subscribers')
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_column('email_verified_at')
