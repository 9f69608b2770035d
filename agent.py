"""Run handloop from a checkout, with nothing installed but requirements.txt: `python agent.py [MODE] [OPTIONS]`.

The same command line as the installed `handloop` command and `python -m handloop` (handloop/agent.py).
"""
from handloop.agent import command

if __name__ == "__main__":
    command()
