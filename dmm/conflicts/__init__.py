"""Conflict detection: analyzers find candidate pairs with evidence, the merger turns them into
one typed conflict per pair, the store keeps them (derived, in the cache) and the human
decisions about them (committed, under .dmm/conflicts/), and the scanner runs it all."""
