"""Reading what a model's answer says: which ids (or their names), choices, dates and counts it
states (is a write the one the user was shown when they confirmed?), which actions it claims to
have done (`claims`), whether it carries tool markup or a pasted tool result instead of
words for the user (`markup`, `pasted`), and whether it asks the user something (`asks`).

Invariants: imports no project module, so the offline judge reads answers with the same code as
the run (what an answer claims must read the same in both); pure functions of the text;
full-width forms and case do not matter (texts are compared in their NFKC, lower-case form).
"""
import re
import unicodedata


def plain(text):
    return unicodedata.normalize("NFKC", str(text)).lower()


def names_in(text, *words):
    """Whether `text` (plain) names any of `words`: ASCII words whole, others as substrings."""
    for word in words:
        if not word:
            continue
        word = plain(word)
        if re.search(rf"(?<![a-z0-9]){re.escape(word)}(?![a-z0-9])" if word.isascii() else re.escape(word), text):
            return True
    return False


MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                                      "dec"), 1)}
NUMERALS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
            "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
            "ten": 10}


def dates(text, year):
    """The dates (YYYY-MM-DD) a plain text states; a month and day without a year take `year`."""
    found = {f"{int(y):04d}-{int(m):02d}-{int(d):02d}"
             for y, m, d in re.findall(r"(\d{4})\s*[-年/.]\s*(\d{1,2})\s*[-月/.]\s*(\d{1,2})", text)}
    found |= {f"{year}-{int(m):02d}-{int(d):02d}" for m, d in re.findall(r"(?<![\d年])(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]", text)}
    found |= {f"{year}-{MONTHS[m]:02d}-{int(d):02d}" for m, d in
              re.findall(r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})\b", text)}
    return found


def counts(text, units=()):
    """The counts a plain text states before one of `units` (2 晚, 两晚, 两个晚上, 2 nights for
    units 晚 and night); with no units, every number it states."""
    found = set()
    unit = "(?:" + "|".join(re.escape(plain(u)) for u in units) + ")" if units else r"(?![\d.])"
    for number in re.findall(r"(\d+|[一二两三四五六七八九十]+|one|two|three|four|five|six|seven|eight|nine|ten)"
                             r"\s*(?:个)?\s*" + unit, text):
        if number.isdigit():
            found.add(int(number))
        elif number in NUMERALS:
            found.add(NUMERALS[number])
        elif number.startswith("十") and number[1:] in NUMERALS:
            found.add(10 + NUMERALS[number[1:]])
    return found




# Claims of work done, in the past tense: "I have searched", 「已经预订了」, an order number. A
# promise ("I will book", 「我将预订」) or a question ("Shall I book it?") claims nothing.
CLAIMS = {
    "read": re.compile(
        r"(?:已经?|已)\s*(?:查询|查看|查过|查到|查了|搜索|搜过|搜到|检索|获取|看过)"
        r"|(?<!没)(?<!未)(?<!没有)(?:查询|搜索|检索|查看|查)(?:了|过|到了)"
        r"|根据(?:查询|搜索|检索)结果"
        r"|\bi(?:\s+have|'ve|\s+just)?\s+(?:already\s+)?(?:checked|searched|looked\s+up|queried|fetched|retrieved|"
        r"found|got\s+the)\b"),
    "write": re.compile(
        r"(?:我\s*已经?|已经?\s*(?:为你|为您|帮你|帮您))\s*(?:为你|为您|帮你|帮您)?\s*(?:成功)?\s*"
        r"(?:预订|预定|订好|订了|下单|下了单|支付|付款|付了|退款|退了|取消了|办好|办理了|提交了)"
        r"|(?:预订|预定|下单|支付|付款|退款|订购)(?:成功|完成)|订好了"
        r"|\bi(?:\s+have|'ve|\s+just)?\s+(?:already\s+|now\s+|successfully\s+)?(?:booked|reserved|ordered|purchased|"
        r"paid|refunded|cancell?ed|submitted|placed)\b"
        r"|\byour\s+(?:[a-z-]+\s+){0,2}(?:is|has\s+been)\s+(?:now\s+|successfully\s+)?(?:booked|reserved|confirmed|"
        r"placed|refunded|cancell?ed)\b"
        r"|\bsuccessfully\s+(?:booked|reserved|ordered|refunded|cancell?ed|placed)\b|\bbooking\s+(?:is\s+)?confirmed\b"),
}


def claims(text):
    """The kinds of action ("read", "write") a text says were already done."""
    text = plain(text)
    return {kind for kind, pattern in CLAIMS.items() if pattern.search(text)}


TAGS = re.compile(r"</?\s*(?:tool_call|tool_response|tool_result|tools|function_call|function|call|invoke|"
                  r"observation)\b", re.I)


def markup(text, names=()):
    """Whether a text carries tool markup or a pasted tool result instead of words for the user: a
    tool tag (<tool_call>, <tool_response>...), a tag named after a tool (<get_weather .../>), or a
    JSON object (a written call, an echoed result)."""
    if TAGS.search(text):
        return True
    if any(re.search(rf"<\s*{re.escape(name)}\b", text) for name in names):
        return True
    return any(_object(text, match.start()) for match in re.finditer(r"\{", text))


def _object(text, start):
    """Whether a JSON object with at least one key begins at `start`."""
    import json
    try:
        value, _ = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        return False
    return isinstance(value, dict) and bool(value)


RESULT = re.compile(r"<\s*(tool_response|tool_result|tool_output|function_results?|observation)\b[^>]*>(.*?)"
                    r"(?:<\s*/\s*\1\s*>|\Z)", re.S | re.I)
FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*(.*?)\s*```$", re.S)


def pasted(text):
    """What a text gives back as a tool result instead of words: (True, the blocks' contents) when it is
    nothing but result blocks (<tool_response>...</tool_response>, the closing tag may be missing);
    (False, [its JSON]) when, code fences aside, it is one JSON value; (False, []) when it has words of
    its own."""
    text = str(text).strip()
    blocks = [m.group(2).strip() for m in RESULT.finditer(text)]
    if blocks and not re.sub(r"[\s.,;:!?。，；：！？]", "", RESULT.sub("", text)):
        return True, blocks
    fenced = FENCE.match(text)
    body = fenced.group(1) if fenced else text
    return False, [body] if body[:1] in ("{", "[") and body[-1:] in ("}", "]") else []


# A question to the user: a question mark, a sentence-final 吗/呢, an interrogative word.
QUESTION = re.compile(r"\?|[吗呢嘛](?:\s*[。.!！~～]|\s*$)|哪(?:家|个|间|天|一|种|些|位|里)|是否|要不要|能否|可否|几(?:晚|天|位|个|间|点)"
                      r"|\b(?:would\s+you\s+like|do\s+you\s+want|shall\s+i|should\s+i)\b")


def asks(text):
    """Whether a text asks the user something (a question, not a request to wait or to confirm nothing)."""
    return bool(QUESTION.search(plain(text)))
