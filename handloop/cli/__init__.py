"""The command line's parts below agent.py: a run put together (session), what it prints (printout, live),
how it ends (exits), --check (check) and the Temporal side (temporal)."""
