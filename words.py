"""Reading a proposal in words: which ids (or their names), choices, dates and counts a text
states. Used to decide whether a write is the one the user was shown when they confirmed.

Invariants: imports no project module; pure functions of the text; full-width forms and case
do not matter (texts are compared in their NFKC, lower-case form).
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


