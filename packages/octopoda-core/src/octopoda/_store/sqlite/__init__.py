"""The SQLite backend: :mod:`.schema` (migrations, its dialect, the write statements),
:mod:`.connection` (opening and migrating a file) and :mod:`.store` (``SqliteStore``)."""
