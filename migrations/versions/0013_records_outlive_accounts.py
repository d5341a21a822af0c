"""address_history: every address an account had (SHA-256); promotion_redemptions keyed by address,
not by user, so they outlive the account; proration_quotes: the proration dates previews issued

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25 18:00:00

"""
import hashlib

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def _sha256(email):
    return hashlib.sha256(email.strip().lower().encode()).hexdigest()


def upgrade():
    op.create_table(
        'address_history',
        sa.Column('user_id', _ID, nullable=False),
        sa.Column('email_sha256', sa.String(length=64), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_address_history_user_id_users'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('user_id', 'email_sha256', name=op.f('pk_address_history')),
    )
    op.create_table(
        'proration_quotes',
        sa.Column('provider_subscription', sa.String(length=255), nullable=False),
        sa.Column('proration_date', sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('provider_subscription', 'proration_date', name=op.f('pk_proration_quotes')),
    )
    bind = op.get_bind()
    users = bind.execute(sa.text('SELECT id, email FROM users')).all()
    now = sa.func.now()
    history = sa.table('address_history', sa.column('user_id'), sa.column('email_sha256'), sa.column('created_at'))
    for user_id, email in users:
        bind.execute(history.insert().values(user_id=user_id, email_sha256=_sha256(email), created_at=now))
    with op.batch_alter_table('promotion_redemptions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('redeemer', sa.String(length=64), nullable=True))
    emails = dict(users)
    for row_id, user_id in bind.execute(sa.text('SELECT id, user_id FROM promotion_redemptions')).all():
        bind.execute(sa.text('UPDATE promotion_redemptions SET redeemer = :r WHERE id = :i'),
                     {'r': _sha256(emails[user_id]), 'i': row_id})
    with op.batch_alter_table('promotion_redemptions', schema=None) as batch_op:
        batch_op.drop_constraint('uq_promotion_redemptions_user_id', type_='unique')
        batch_op.drop_constraint('fk_promotion_redemptions_user_id_users', type_='foreignkey')
        batch_op.drop_column('user_id')
        batch_op.alter_column('redeemer', existing_type=sa.String(length=64), nullable=False)
        batch_op.create_unique_constraint(op.f('uq_promotion_redemptions_redeemer'), ['redeemer', 'promotion_code'])


def downgrade():
    # A redemption of a deleted account has no user to go back to: it is dropped.
    with op.batch_alter_table('promotion_redemptions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('user_id', _ID, nullable=True))
    op.execute('UPDATE promotion_redemptions SET user_id = (SELECT MIN(user_id) FROM address_history '
               'WHERE address_history.email_sha256 = promotion_redemptions.redeemer)')
    op.execute('DELETE FROM promotion_redemptions WHERE user_id IS NULL OR id NOT IN '
               '(SELECT MIN(id) FROM promotion_redemptions GROUP BY user_id, promotion_code)')
    with op.batch_alter_table('promotion_redemptions', schema=None) as batch_op:
        batch_op.drop_constraint('uq_promotion_redemptions_redeemer', type_='unique')
        batch_op.drop_column('redeemer')
        batch_op.alter_column('user_id', existing_type=_ID, nullable=False)
        batch_op.create_foreign_key(op.f('fk_promotion_redemptions_user_id_users'), 'users', ['user_id'], ['id'],
                                    ondelete='CASCADE')
        batch_op.create_unique_constraint(op.f('uq_promotion_redemptions_user_id'), ['user_id', 'promotion_code'])
    op.drop_table('proration_quotes')
    op.drop_table('address_history')
