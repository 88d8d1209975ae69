"""The audit layer: the hash-chain format (``chain.py``), verification of a chain in the
store or in an exported bundle (``trail.py``), and Ed25519-signed heads (``signing.py``)."""
