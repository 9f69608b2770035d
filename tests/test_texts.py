"""The loop's catalogue (texts/__init__.py: texts/zh.py and texts/en.py): what it promises of its tables."""
import string

from handloop import texts


def fields(text):
    return sorted(name for _, name, _, _ in string.Formatter().parse(text) if name)


def test_the_loops_tables_have_the_same_keys_and_placeholders_and_english_has_no_cjk():
    assert set(texts.ZH) == set(texts.EN), set(texts.ZH) ^ set(texts.EN)
    assert not [k for k in texts.ZH if fields(texts.ZH[k]) != fields(texts.EN[k])]
    assert not [k for k, v in texts.EN.items() if texts.CJK.search(v)]
    assert not [k for k, v in {**texts.ZH, **texts.EN}.items() if not all(f.isidentifier() for f in fields(v))]


def test_every_text_can_be_said():                   # a stray brace would raise in the middle of a run
    for table in (texts.ZH, texts.EN):
        for key, text in table.items():
            try:
                text.format(**{name: 1 for name in fields(text)})          # numbers ({seconds:g}) and most others
            except ValueError:
                text.format(**{name: "x" for name in fields(text)})        # a string format

