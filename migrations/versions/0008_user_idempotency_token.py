"""users.idempotency_token: a random value per user for the provider's idempotency keys

Keys built from the user id (customer-1) collide between databases that share one Stripe
account; Stripe refuses a reused key with other parameters for 24 hours. Existing users get
their own random value here.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 10:35:00

"""
import secrets

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.add_column(sa.Column('idempotency_token', sa.String(length=32), nullable=True))
    users = sa.table('users', sa.column('id', sa.BigInteger()), sa.column('idempotency_token', sa.String(32)))
    connection = op.get_bind()
    for (user_id,) in connection.execute(sa.select(users.c.id)).all():
        connection.execute(users.update().where(users.c.id == user_id)
                           .values(idempotency_token=secrets.token_hex(16)))
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.alter_column('idempotency_token', existing_type=sa.String(length=32), nullable=False)
        batch_op.create_unique_constraint(batch_op.f('uq_users_idempotency_token'), ['idempotency_token'])


def downgrade():
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('uq_users_idempotency_token'), type_='unique')
        batch_op.drop_column('idempotency_token')
