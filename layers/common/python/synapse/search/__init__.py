"""The search engine: tokenizer, BM25, vectors, fusion, the in-memory corpus and its cache."""
