"""An agent for long runs on Temporal (tests/test_temporal.py, bench/durable_bench.py): one read tool whose
every result is about 20 KB (what a web page or a file gives a research or coding agent), no write, no plan.
Its policy allows the command line's longest run and results of that size whole; its model is the test's.
"""
from handloop.agents import Agent
from handloop.calls import Tool

PAGE_CHARS = 20_000


def read_page(page):
    """Page `page` of a long text: about PAGE_CHARS characters, different on every page."""
    line = f"Page {page}, line {{n}}: the quick brown fox jumps over the lazy dog, {page * 7919 % 10007}.\n"
    text, n = [], 0
    while sum(map(len, text)) < PAGE_CHARS:
        text.append(line.format(n=n))
        n += 1
    return {"page": page, "text": "".join(text)[:PAGE_CHARS]}


AGENT = Agent(
    "pages", "You read the pages the user asks for with read_page, one page per turn, then say you are done.",
    [Tool("read_page", "Read one page of the text.", {"type": "object", "required": ["page"],
                                                      "properties": {"page": {"type": "integer", "minimum": 1}}},
          read_page)],
    goal="Read the pages one after another until I say stop.", language="en", planning=False,
    policy={"max_turns": 1000, "token_budget": 10 ** 9, "result_max_chars": 24_000})
