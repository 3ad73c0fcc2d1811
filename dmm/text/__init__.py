"""Text analysis shared by indexing and querying: terms, stems and the word-neighbour lexicon."""
