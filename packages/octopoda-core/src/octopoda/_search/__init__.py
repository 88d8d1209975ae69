"""Search: ranking memories by words (and, later, by meaning).

* :mod:`.lexical`: the text of a memory (its key and the strings of its value), the
  tokenizer and BM25 scoring, pure Python, for rankings done in the process (the LangGraph
  store, ``as_of`` searches) and for building the stores' full-text queries;
* :mod:`.vectors`: similarity of embedding vectors.

The stores keep a full-text index of current memories (SQLite FTS5, PostgreSQL tsvector)
written in each commit's own transaction; :mod:`.lexical` says what text goes into it.
"""
