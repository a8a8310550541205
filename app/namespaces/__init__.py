"""Per-namespace state every API process shares through PostgreSQL: the generation the search
cache keys on, the write counter behind the periodic review, the namespace's size."""
