"""Django's database sessions, the row read by one plain query.

Every request of a logged-in user reads its session row; Django's ORM spent
~0.6 ms of CPU building and compiling that query against ~0.05 ms to run it
(issue 17: on 2 shared cores the search page's CPU is its throughput). The row
is still read from the database on every request, never kept in a process:
a session ended by one web process (logout, expiry, deletion) is over for
all of them at once. Writing, creating and deleting sessions are Django's.

    SESSION_ENGINE = "mnote.accounts.sessions"
"""

from types import SimpleNamespace

from django.contrib.sessions.backends import db
from django.db import connections, router
from django.utils import timezone


class SessionStore(db.SessionStore):
    def _get_session_from_db(self):
        # As Django's: the row of this key that has not expired, or no key.
        if not self.session_key:
            self._session_key = None
            return None
        model = self.model
        connection = connections[router.db_for_read(model)]
        quote = connection.ops.quote_name
        column = {name: quote(model._meta.get_field(name).column) for name in ("session_key", "session_data", "expire_date")}
        sql = (
            f"SELECT {column['session_data']} FROM {quote(model._meta.db_table)}"
            f" WHERE {column['session_key']} = %s AND {column['expire_date']} > %s"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [self.session_key, connection.ops.adapt_datetimefield_value(timezone.now())])
            row = cursor.fetchone()
        if row is None:
            self._session_key = None
            return None
        return SimpleNamespace(session_data=row[0])
