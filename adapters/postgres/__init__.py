"""apply's lock and markers, and `run --lock NAME`, in PostgreSQL, for many hosts.

psycopg 3 is imported only here, only when this backend is chosen. Every call goes
through libpq's non-blocking interface (`session.py`), so a signal or a deadline
ends any of them; the SQL is in one place (`sql.py`).
"""
