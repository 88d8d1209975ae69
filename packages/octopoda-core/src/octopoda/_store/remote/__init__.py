"""The remote store: the store protocol over an Octopoda server's HTTP API
(:mod:`.codec` the wire form of rows, events and errors; :mod:`.store` ``RemoteStore``)."""
