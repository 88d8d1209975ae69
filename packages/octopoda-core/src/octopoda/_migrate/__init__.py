"""Coming from Octopoda 3.3.4: reading its database and export bundles (standard library
only), importing them with history (``octopoda migrate``), and the install-conflict check."""
