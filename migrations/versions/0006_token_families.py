"""personal access tokens: refresh families, the client seen at creation, rotated-out tokens

family_id ties a refreshed token to the token its chain started from; rotated_tokens keeps what a
refresh rotated out, so that a replay of it revokes the family (reuse detection, issue 12).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22 10:00:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('personal_access_tokens', schema=None) as batch_op:
        batch_op.add_column(sa.Column('family_id', sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column('user_agent', sa.String(length=512), nullable=True))
        batch_op.add_column(sa.Column('ip', sa.String(length=45), nullable=True))
        batch_op.create_index(batch_op.f('ix_personal_access_tokens_family_id'), ['family_id'], unique=False)
    op.create_table('rotated_tokens',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=False, nullable=False),
    sa.Column('user_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('family_id', sa.BigInteger(), nullable=False),
    sa.Column('token', sa.String(length=64), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('rotated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_rotated_tokens_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_rotated_tokens')),
    )
    with op.batch_alter_table('rotated_tokens', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_rotated_tokens_created_at'), ['created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_rotated_tokens_expires_at'), ['expires_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_rotated_tokens_family_id'), ['family_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_rotated_tokens_user_id'), ['user_id'], unique=False)


def downgrade():
    with op.batch_alter_table('rotated_tokens', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_rotated_tokens_user_id'))
        batch_op.drop_index(batch_op.f('ix_rotated_tokens_family_id'))
        batch_op.drop_index(batch_op.f('ix_rotated_tokens_expires_at'))
        batch_op.drop_index(batch_op.f('ix_rotated_tokens_created_at'))
    op.drop_table('rotated_tokens')
    with op.batch_alter_table('personal_access_tokens', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_personal_access_tokens_family_id'))
        batch_op.drop_column('ip')
        batch_op.drop_column('user_agent')
        batch_op.drop_column('family_id')
