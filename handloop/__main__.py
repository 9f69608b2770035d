"""`python -m handloop`: the command line (handloop/agent.py)."""
from .agent import command

command()
