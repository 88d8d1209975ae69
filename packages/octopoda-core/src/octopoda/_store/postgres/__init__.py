"""The PostgreSQL backend (the ``postgres`` extra): :mod:`.schema` (migrations, its dialect,
the commit's statements), :mod:`.locks` (the advisory locks of a commit), :mod:`.driver`
(psycopg and its errors), :mod:`.commit` (a commit's two round trips) and :mod:`.store`
(``PostgresStore``). Only :mod:`.schema` and :mod:`.locks` import without psycopg."""
