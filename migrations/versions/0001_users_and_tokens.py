"""users and personal access tokens

Revision ID: 0001
Revises: 
Create Date: 2026-11-21 13:34:24.232980

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    
    op.create_table('users',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('email', sa.String(length=320), nullable=False),
    sa.Column('password_hash', sa.String(length=255), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=True),
    sa.Column('provider_id', sa.String(length=255), nullable=True),
    sa.Column('plan', sa.String(length=64), nullable=True),
    sa.Column('pm_type', sa.String(length=32), nullable=True),
    sa.Column('pm_last_four', sa.String(length=4), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_users')),
    sa.UniqueConstraint('email', name=op.f('uq_users_email')),
    sa.UniqueConstraint('provider_id', name=op.f('uq_users_provider_id')),
    sqlite_autoincrement=True,
    )
    op.create_table('personal_access_tokens',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('user_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('token', sa.String(length=64), nullable=False),
    sa.Column('abilities', sa.JSON(), nullable=False),
    sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_personal_access_tokens_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_personal_access_tokens')),
    sa.UniqueConstraint('token', name=op.f('uq_personal_access_tokens_token')),
    sqlite_autoincrement=True,
    )
    with op.batch_alter_table('personal_access_tokens', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_personal_access_tokens_created_at'), ['created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_personal_access_tokens_expires_at'), ['expires_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_personal_access_tokens_user_id'), ['user_id'], unique=False)




def downgrade():
    
    with op.batch_alter_table('personal_access_tokens', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_personal_access_tokens_user_id'))
        batch_op.drop_index(batch_op.f('ix_personal_access_tokens_expires_at'))
        batch_op.drop_index(batch_op.f('ix_personal_access_tokens_created_at'))

    op.drop_table('personal_access_tokens')
    op.drop_table('users')

