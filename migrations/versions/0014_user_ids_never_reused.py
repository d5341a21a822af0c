"""users: AUTOINCREMENT again on SQLite, so a deleted user's id is never given to another

0001 made users AUTOINCREMENT, but SQLite's batch migrations (0005, 0008, 0010) rebuild the table
without it, and SQLite then reuses the largest id after its row is deleted: a token, link or log line
naming a deleted user would name the next one. PostgreSQL's sequences never reuse a value.
A later batch migration of users must pass ``table_kwargs={"sqlite_autoincrement": True}``.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25 17:20:00

"""
from alembic import op


# revision identifiers, used by Alembic.
revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade():
    if op.get_bind().dialect.name != 'sqlite':
        return
    # Rebuilt with AUTOINCREMENT: the copied rows set sqlite_sequence to the largest id kept.
    with op.batch_alter_table('users', recreate='always', table_kwargs={'sqlite_autoincrement': True}):
        pass


def downgrade():
    if op.get_bind().dialect.name != 'sqlite':
        return
    with op.batch_alter_table('users', recreate='always', table_kwargs={'sqlite_autoincrement': False}):
        pass
