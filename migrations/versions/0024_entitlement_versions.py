"""entitlement_versions: a random version per billable, changed by PostgreSQL triggers on every write to what decides its features (the consume's one-round-trip path, app/entitlements/fast.py)

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-29 07:00:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0024'
down_revision = '0023'
branch_labels = None
depends_on = None

# A new random version, not a counter: a database restored from a backup, or emptied by a test, cannot give a
# billable a version a worker already saw with other rows.
_FUNCTIONS = """
CREATE FUNCTION entitlement_version_bump(key text) RETURNS void LANGUAGE sql AS $$
  INSERT INTO entitlement_versions (billable, version)
  SELECT key, (random() * 9.2e18)::bigint WHERE key IS NOT NULL  -- a row of nobody's (its owner's key set null)
  ON CONFLICT (billable) DO UPDATE SET version = EXCLUDED.version
$$;
CREATE FUNCTION entitlement_version_of_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- A row going with its owner (a cascade) leaves the owner's row to the owner's own trigger.
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    IF OLD.user_id IS NOT NULL THEN
      IF EXISTS (SELECT 1 FROM users WHERE id = OLD.user_id) THEN
        PERFORM entitlement_version_bump('user:' || OLD.user_id);
      END IF;
    ELSIF EXISTS (SELECT 1 FROM organizations WHERE id = OLD.organization_id) THEN
      PERFORM entitlement_version_bump('organization:' || OLD.organization_id);
    END IF;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    PERFORM entitlement_version_bump(CASE WHEN NEW.user_id IS NOT NULL THEN 'user:' || NEW.user_id
                                          ELSE 'organization:' || NEW.organization_id END);
  END IF;
  RETURN NULL;
END $$;
CREATE FUNCTION entitlement_version_of_billable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- A deleted account or organisation keeps nothing: no row is also no copy's version, and its id is never
  -- given again.
  DELETE FROM entitlement_versions WHERE billable = TG_ARGV[0] || ':' || OLD.id;
  RETURN NULL;
END $$;
"""
# What decides a billable's features (app.entitlements.features): its subscriptions, its overrides, its Stripe
# features, and that it exists.
_OWNED = ('subscriptions', 'entitlement_overrides', 'stripe_entitlements')
_BILLABLES = (('users', 'user'), ('organizations', 'organization'))


def upgrade():
    op.create_table('entitlement_versions',
    sa.Column('billable', sa.String(length=80), nullable=False),
    sa.Column('version', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('billable', name=op.f('pk_entitlement_versions'))
    )
    if op.get_bind().dialect.name != 'postgresql':
        return  # the one-round-trip path is PostgreSQL's: elsewhere nothing reads the versions
    op.execute(_FUNCTIONS)
    for table in _OWNED:
        op.execute(f"CREATE TRIGGER {table}_entitlement_version AFTER INSERT OR UPDATE OR DELETE ON {table} "
                   "FOR EACH ROW EXECUTE FUNCTION entitlement_version_of_owner()")
    for table, kind in _BILLABLES:
        op.execute(f"CREATE TRIGGER {table}_entitlement_version AFTER DELETE ON {table} "
                   f"FOR EACH ROW EXECUTE FUNCTION entitlement_version_of_billable('{kind}')")


def downgrade():
    if op.get_bind().dialect.name == 'postgresql':
        for table in (*_OWNED, *(table for table, _ in _BILLABLES)):
            op.execute(f"DROP TRIGGER {table}_entitlement_version ON {table}")
        for function in ('entitlement_version_of_billable()', 'entitlement_version_of_owner()',
                         'entitlement_version_bump(text)'):
            op.execute(f"DROP FUNCTION {function}")
    op.drop_table('entitlement_versions')
