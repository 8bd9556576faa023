"""Finishing passes over a balanced placement: moves back home, stand-ins and shortcuts, leader counts
to the rounded average, detours for the last per-topic slots, and the passes that revisit a
finished plan (rebuilding rounds, count exchanges)."""
