"""organizations, organization_members, organization_invitations; a subscription belongs to a user or an
organisation; a notification is unique per user, event and kind

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25 17:30:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None

USER_ID = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')
# SQLite: a batch migration recreates the table; ids are never reused only with AUTOINCREMENT (see 0014).
AUTOINCREMENT = {'sqlite_autoincrement': True}


def upgrade():
    op.create_table(
        'organizations',
        sa.Column('id', sa.String(length=32), nullable=False),
        sa.Column('name', sa.String(length=255), nullable=False),
        sa.Column('billing_email', sa.String(length=320), nullable=True),
        sa.Column('provider_id', sa.String(length=255), nullable=True),
        sa.Column('plan', sa.String(length=64), nullable=True),
        sa.Column('pm_type', sa.String(length=32), nullable=True),
        sa.Column('pm_last_four', sa.String(length=4), nullable=True),
        sa.Column('pm_exp_month', sa.SmallInteger(), nullable=True),
        sa.Column('pm_exp_year', sa.SmallInteger(), nullable=True),
        sa.Column('idempotency_token', sa.String(length=32), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_organizations')),
        sa.UniqueConstraint('idempotency_token', name=op.f('uq_organizations_idempotency_token')),
        sa.UniqueConstraint('provider_id', name=op.f('uq_organizations_provider_id')),
    )
    op.create_table(
        'organization_members',
        sa.Column('organization_id', sa.String(length=32), nullable=False),
        sa.Column('user_id', USER_ID, nullable=False),
        sa.Column('role', sa.String(length=16), nullable=False),
        sa.Column('joined_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['organization_id'], ['organizations.id'],
                                name=op.f('fk_organization_members_organization_id_organizations'), ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_organization_members_user_id_users'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('organization_id', 'user_id', name=op.f('pk_organization_members')),
    )
    with op.batch_alter_table('organization_members', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_organization_members_user_id'), ['user_id'], unique=False)
    op.create_table(
        'organization_invitations',
        sa.Column('id', sa.String(length=32), nullable=False),
        sa.Column('organization_id', sa.String(length=32), nullable=False),
        sa.Column('email', sa.String(length=320), nullable=False),
        sa.Column('role', sa.String(length=16), nullable=False),
        sa.Column('invited_by', USER_ID, nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['invited_by'], ['users.id'], name=op.f('fk_organization_invitations_invited_by_users'),
                                ondelete='SET NULL'),
        sa.ForeignKeyConstraint(['organization_id'], ['organizations.id'],
                                name=op.f('fk_organization_invitations_organization_id_organizations'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_organization_invitations')),
        sa.UniqueConstraint('organization_id', 'email', name=op.f('uq_organization_invitations_organization_id')),
    )
    with op.batch_alter_table('organization_invitations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_organization_invitations_organization_id'), ['organization_id'],
                              unique=False)
    with op.batch_alter_table('subscriptions', schema=None, table_kwargs=AUTOINCREMENT) as batch_op:
        batch_op.alter_column('user_id', existing_type=USER_ID, nullable=True)
        batch_op.add_column(sa.Column('organization_id', sa.String(length=32), nullable=True))
        batch_op.create_index(batch_op.f('ix_subscriptions_organization_id'), ['organization_id'], unique=False)
        batch_op.create_foreign_key(batch_op.f('fk_subscriptions_organization_id_organizations'), 'organizations',
                                    ['organization_id'], ['id'], ondelete='CASCADE')
    with op.batch_alter_table('notifications', schema=None, table_kwargs=AUTOINCREMENT) as batch_op:
        batch_op.drop_constraint('uq_notifications_event_id', type_='unique')
        batch_op.create_unique_constraint(batch_op.f('uq_notifications_user_id'), ['user_id', 'event_id', 'kind'])


def downgrade():
    with op.batch_alter_table('notifications', schema=None, table_kwargs=AUTOINCREMENT) as batch_op:
        batch_op.drop_constraint(batch_op.f('uq_notifications_user_id'), type_='unique')
        batch_op.create_unique_constraint('uq_notifications_event_id', ['event_id', 'kind'])
    with op.batch_alter_table('subscriptions', schema=None, table_kwargs=AUTOINCREMENT) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_subscriptions_organization_id_organizations'), type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_subscriptions_organization_id'))
        batch_op.drop_column('organization_id')
        batch_op.alter_column('user_id', existing_type=USER_ID, nullable=False)
    op.drop_table('organization_invitations')
    op.drop_table('organization_members')
    op.drop_table('organizations')
