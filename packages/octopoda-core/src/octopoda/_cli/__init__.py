"""The ``octopoda`` command (``pip install 'octopoda-core[cli]'``): ``app.py`` builds the click
group; one module per command group (``memory.py``, ``audit.py``, ``store.py``), with the
shared options (``options.py``) and output formatting (``output.py``)."""
