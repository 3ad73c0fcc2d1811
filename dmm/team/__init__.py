"""dmm across clones: the store's refs on remotes (refs), the audit records of every clone and
how they meet (records), what a forge's merges mean (landed), and `dmm sync` (sync)."""
