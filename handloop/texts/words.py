"""Reading what a model's answer says: which ids (or their names), choices, dates and counts it
states (is a write the one the user was shown when they confirmed?), which actions it claims to
have done (`claims`), whether it carries tool markup or a pasted tool result instead of
words for the user (`markup`, `pasted`), whether it asks the user something (`asks`), whether it proposes doing
something for them (`proposes`: an offer, not a mention or a how-to), whether it asks the user to confirm
(`asks_confirm`), which write it is about (`mentions`), which writes the user's own words ask for (`asks_for`: the
verbs of a write's name and description, VERBS) and whether a reply declines (`declines`).

This is the one place of the package that reads words for the loop, and what it reads only steers: whether to ask
the model for a call, which step to push, whether the run still needs a write. No reading here decides what runs:
the modules that decide that (guards.py, confirmation/) import nothing of it.

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
URL = re.compile(r"[a-z][a-z0-9+.-]*://\S+|www\.\S+")      # a link's "?" asks nothing
QUESTION = re.compile(r"\?|[吗呢嘛](?:\s*[。.!！~～]|\s*$)|哪(?:家|个|间|天|一|种|些|位|里)|是否|要不要|能否|可否|几(?:晚|天|位|个|间|点)"
                      r"|\b(?:would\s+you\s+like|do\s+you\s+want|shall\s+i|should\s+i)\b")


def asks(text):
    """Whether a text asks the user something (a question, not a request to wait or to confirm nothing; a closing
    formula, "Anything else?", asks nothing)."""
    return bool(QUESTION.search(_unclosed(URL.sub(" ", plain(text)))))


# Closing formulas: an offer of more help once the answer is given ("Is there anything else I can help you with?",
# 「还有其他需要帮忙的吗？」). They ask nothing about the task and propose nothing.
CLOSING = re.compile(r"(?:is\s+there\s+)?anything\s+else\b[^.!?\n]*[.!?]*"
                     r"|(?:please\s+)?(?:let\s+me\s+know|feel\s+free\s+to\s+ask)\s+if\s+(?:you\s+(?:need|have)|there\s+is|"
                     r"there's)\s+(?:anything|any\s+other|more|other)\b[^.!?\n]*[.!?]*"
                     r"|(?:请问)?(?:您|你)?还有(?:什么|其他|别的|其它)[^。！？!?\n]*[。！？!?]*"
                     r"|(?:如有|如果还有|如果有|若有|还有)(?:其他|其它|任何|别的)(?:问题|疑问|需要)[^。！？!?\n]*[。！？!?]*")


def _unclosed(text):
    """A plain text without its closing formulas."""
    return CLOSING.sub(" ", text)


# An offer to write: a question or a statement that proposes doing it for the user ("Shall I book it?", "I can pay
# B2 for you, confirm?", 「确认后为您预订」, 「要我帮您取消吗？」). Mentioning a write, or telling the user how they
# can make it themselves ("You can change your password in settings.", 「密码可在设置中修改」), proposes nothing.
PROPOSALS = {
    "en": re.compile(
        r"\b(?:shall|should|may|can|could)\s+i\b(?!\s+(?:help|assist|be\s+of|do\s+anything|answer|clarify|explain))"
        r"|\b(?:shall|should)\s+we\b"
        r"|\b(?:would|do)\s+you\s+(?:like|want)\s+(?:me\s+)?to\b(?!\s+(?:know|hear|learn|see|ask|check\s+anything))"
        r"|\b(?:would|do)\s+you\s+(?:like|want)\s+(?:it|them|that|this|one)\b"
        r"|\bwant\s+me\s+to\b|\blet\s+me\s+know\s+if\s+you\s+(?:want|would\s+like)\s+(?:me\s+)?to\b"
        r"|\bconfirm(?:ation)?\b(?!\s+(?:number|code|email|id)\b)"
        r"|\bproceed\b|\bgo\s+ahead\b"
        r"|\bi(?:\s+would|'d|\s+can)?\s+(?:propose|suggest|recommend)\b|\bmy\s+(?:proposal|suggestion|recommendation)\b"
        r"|\bi(?:\s+can|\s+could|\s+will|'ll|'d|\s+would)\s+(?:be\s+(?:happy|glad)\s+to\s+)?[a-z]+\b[^.!?\n]{0,80}?"
        r"\b(?:for\s+you|once\s+you|if\s+you|when\s+you|after\s+you|as\s+soon\s+as\s+you)\b"
        r"|\b(?:ready|happy|glad)\s+to\s+(?!help|assist)[a-z]+"
        r"|\b(?:is\s+(?:that|this|it)\s+(?:ok|okay|alright|all\s+right|fine)|sounds?\s+good|does\s+(?:that|this)\s+work)\b"
        r"|\b(?:reply|answer|say|respond)\s+(?:with\s+)?[\"'“‘「]?(?:yes|confirm|ok)\b"
        r"|\bapprov(?:e|al)\b|\b(?:ok|okay)\s+to\b"),
    "zh": re.compile(
        r"确认(?:后|的话|之后|以后|无误|一下|吗|么|\s*[?？])|(?:您|你)(?:再次?)?(?:确认|同意)|请(?:您|你)?(?:再次?)?(?:确认|回复|回覆|答复)|回复\s*[「\"“]?确认"
        r"|如(?:需|需要|果需要|果(?:您|你)需要|(?:您|你)需要|果(?:您|你)同意|(?:您|你)同意)"
        r"|是否(?:需要|要|同意|继续|确认|现在|立即|马上|帮|为|给|替|预订|预定|下单|支付|办理|执行|提交)|要不要|需不需要"
        r"|(?:要|需要|想让|想要)我[^。！？!?\n]{0,40}[吗么嘛]|(?:要|需要)(?:为|帮|给|替)(?:您|你)[^。！？!?\n]{0,40}[吗么嘛]"
        r"|(?:我|可以|能|将|会|来|马上|这就)(?:为|帮|给|替)(?:您|你)(?!查|看|找|解答|说明|介绍)"
        r"|我(?:还|也)?(?:可以|能)(?!查|看|找|解答|说明|介绍|告诉|回答)"
        r"|(?:要|需要)(?:现在|马上|立即)?(?:办理|办|做|执行|提交|处理|继续|申请|操作)[吗么嘛]"
        r"|我?(?:建议|推荐|提议)(?!(?:您|你))|(?:建议|推荐)(?:为|帮)(?:您|你)"
        r"|(?:好|可以|行|同意|确定|没问题)吗|可以的话|批准|(?:订|买|选|要|换|付|退)(?:哪|几)"),
}


def proposes(text, lang=None):
    """Whether a text proposes doing something for the user: a question or a statement that offers it (see
    PROPOSALS), closing formulas aside. `lang`: read that language's patterns only ("en", "zh"); None: both (a
    model may answer in either)."""
    plain_text = _unclosed(plain(text))
    patterns = [PROPOSALS[lang]] if lang in PROPOSALS else PROPOSALS.values()
    return any(p.search(plain_text) for p in patterns)


# The verbs of writes, one group of synonyms a line: (English, Chinese) regex fragments, English read as whole words
# (a sentence's start is ^), Chinese as substrings. Nouns that share a verb's letters are left out ("booking",
# "order", "cancellation", 订单, 支付方式): a question about a booking or an order asks for no write.
VERBS = (
    (r"book(?:s|ed)?|reserv(?:e|es|ed|ing)", r"预订|预定|订(?!单|阅)|订购"),
    (r"pay(?:s|ing)?|paid|settle[sd]?|transfer(?:s|red|ring)?|wire[sd]?", r"支付(?!方式)|付款(?!方式)|付钱|缴费|缴纳|还款|"
     r"结账|转账|汇款|转给|转\s*[\d一二两三四五六七八九十]"),
    (r"cancel(?:s|led|ed|ling|ing)?|call\s+off", r"取消|退订|撤销"),
    (r"send(?:s|ing)?|sent|tell(?!\s+(?:me|us)\b)|(?<!looking )(?<!look )forward(?:s|ed)?|notify|notified|invite[sd]?|inviting",
     r"发送|发给|发一|发个|告诉(?!我)|转告|"
     r"转发|通知|邀请"),
    (r"chang(?:e|es|ed|ing)|updat(?:e|es|ed|ing)|modif(?:y|ies|ied|ying)|edit(?:s|ed|ing)?|reset(?:s|ting)?|renam(?:e|ed)",
     r"修改|更改|改成|改为|更新|变更|重置|重设"),
    (r"return(?:s|ed|ing)?|send\s+back", r"退货|退回|退还|退掉|寄回"),
    (r"exchang(?:e|es|ed|ing)|swap(?:s|ped)?|replac(?:e|es|ed|ing)", r"换货|更换|换成|换一|调换|替换"),
    (r"refund(?:s|ed|ing)?", r"退款|退钱"),
    (r"buy(?:s|ing)?|bought|purchas(?:e|es|ed|ing)|(?:^|please\s+|to\s+|and\s+|then\s+)order|re-?order|ordering|"
     r"order\s+(?:a|an|one|two|three|new|some|me|it|them|for)", r"购买|下单|订购|买(?!单)"),
    (r"delet(?:e|es|ed|ing)|remov(?:e|es|ed|ing)", r"删除|删掉|移除|去掉"),
    (r"add(?:s|ed|ing)?|join(?:s|ed)?|enrol+(?:s|ed)?", r"添加|加入|加到|拉进|拉入"),
    (r"creat(?:e|es|ed|ing)|register(?:s|ed)?|sign\s+up|schedul(?:e|es|ed|ing)", r"创建|新建|开通|注册|预约|安排"),
    (r"admit(?:s|ted)?|check\s+in", r"入院|收治|办理入住"),
    (r"upgrad(?:e|es|ed|ing)|downgrad(?:e|es|ed|ing)", r"升级|降级|升舱"),
    (r"note(?:s|d)?|record(?:s|ed)?|sav(?:e|es|ed)|log(?:s|ged)?", r"记录|记下|保存|备注"),
)
VERB_GROUPS = tuple((re.compile(rf"(?<![a-z0-9])(?:{en})(?![a-z0-9])"), re.compile(zh)) for en, zh in VERBS)
# A sentence that asks how the user can do it themselves asks for no write ("How do I change my password?").
HOW_TO = re.compile(r"\bhow\s+(?:do|can|could|should|would)\s+i\b|\bwhere\s+(?:do|can|could)\s+i\b|怎么|怎样|如何|在哪")
# A question for a fact asks for no write either ("Who else is invited?", "When is my next class?", 「谁被邀请了？」);
# a yes-no question can ("Can you book it?"), and so it is read as any other sentence.
FACT_QUESTION = re.compile(r"^(?:and\s+|so\s+|but\s+|also\s+)?(?:who|whom|whose|what|when|where|which|why|"
                           r"how\s+(?:many|much|long|often|far|old))\b.*\?$"
                           r"|^(?!.*(?:帮|(?<![邀申])请|给我)).*(?:谁|多少|什么时候|几点|哪里|哪儿|什么).*[？?]$")
# A verb after a form of "to be" is a state, not a request ("the files that are shared with Alex").
PASSIVE = re.compile(r"(?<![a-z0-9])(?:am|is|are|was|were|be|been|being|get|got)\s+(?:[a-z]+ly\s+)?$")
# A verb in the past after a person is something that happened, not a request ("They sent their hobbies to Bob",
# "I just paid the bill"); "Please send it", "Have it sent" are still asked for.
NARRATED = re.compile(r"(?<![a-z0-9])(?:i|you|he|she|we|they)\s+(?:just\s+|already\s+|recently\s+|also\s+)?$")
PAST = re.compile(r"(?:ed|sent|paid|bought|got)$")
SENTENCE = re.compile(r"[^.!?;。！？；\n]+[.!?;。！？；]?")


def asks_for(said, name, description=""):
    """Whether the user's own messages (`said`: their texts) ask for a write: one of their sentences holds a verb
    of the write's (the VERBS groups its name or its description's first sentence holds; none: its name's first
    word, as a word), not as a state ("is invited") nor in the past after a person ("they sent"), in a sentence that asks neither how the user could do it
    themselves nor a question for a fact ("Who else is invited?"); "tell me" asks for an answer, not a message."""
    sentences = [s.strip() for text in said for s in SENTENCE.findall(URL.sub(" ", plain(text)))]
    sentences = [s for s in sentences if not HOW_TO.search(s) and not FACT_QUESTION.search(s)]
    return any(_active(verb, s) for verb in _verbs(name, description) for s in sentences)


def _active(verb, sentence):
    """Whether `verb` occurs in `sentence` as something to do: not as a state after "is", "are", "been", nor in the
    past after a person ("they sent")."""
    return any(not PASSIVE.search(sentence[:m.start()]) and
               not (PAST.search(m.group(0)) and NARRATED.search(sentence[:m.start()]))
               for m in verb.finditer(sentence))


def _verbs(name, description):
    """The patterns of a write's verbs (both languages of each VERBS group its name or description holds)."""
    own = plain(re.sub(r"[_\-]+", " ", str(name)))
    first = SENTENCE.search(plain(description))
    held = " ".join([own, first.group(0) if first else ""])
    found = [p for group in VERB_GROUPS if any(p.search(held) for p in group) for p in group]
    word = own.split()[0] if own.split() else ""
    return found or ([re.compile(rf"(?<![a-z0-9]){re.escape(word)}[a-z]*")] if word else [])


def mentions(text, name, description=""):
    """Whether a text names a verb of the write `name` (its VERBS groups, as `asks_for` finds them), in any
    sentence: which write an offer is about. It only steers (the loop asks the model for that write's call)."""
    flat = URL.sub(" ", plain(text))
    return any(verb.search(flat) for verb in _verbs(name, description))


def asks_confirm(text, replies=()):
    """Whether a text asks the user to confirm something: it names one of the agent's confirm `replies` or the
    word "confirm" / 确认 in a request ("Please confirm.", 「好的，请确认。」). It only steers: with nothing held,
    the loop asks the model for the call instead of waiting for a confirmation of nothing."""
    flat = _unclosed(plain(text))
    return bool(CONFIRMING.search(flat)) or any(
        names_in(flat, f"reply {r}", f"say {r}", f"回复{r}", f"回复「{r}」", f"回复“{r}”") for r in replies if r)


CONFIRMING = re.compile(r"\bplease\s+confirm\b|\bconfirm\s+(?:to|if|that|whether|and)\b|\bwaiting\s+for\s+your\s+confirm"
                        r"|请(?:您|你)?(?:再次?)?确认|等待(?:您|你)?的?确认|确认(?:后|之后|以后|一下|吗|么)")


# A reply that declines a write, or tells the agent not to go on with it ("Don't refund it, I changed my mind",
# 「不要退款了」). It only steers: any reply other than a confirm reply declines what waits, whatever it says.
DECLINES = re.compile(r"不订|不要订|不预订|别订|不用了|不需要|取消|算了|放弃|先不要|先不|暂不|改主意|不要[^，。,.!！?？]{0,6}了"
                      r"|\bno\b|\bcancel|\bdon'?t\s+(?:book|refund|pay|send|cancel|return|do\s+it|go\s+ahead)\b"
                      r"|\bnever\s*mind\b|\bchanged\s+my\s+mind\b")


def declines(text):
    """Whether a user's reply declines the write or asks the agent not to go on with it (steering only)."""
    return bool(DECLINES.search(plain(text)))
