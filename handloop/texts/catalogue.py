"""How a catalogue of texts is said, whoever owns the tables: one table per language, the same keys in each,
a Texts per language that says a key with its values, and Said and Joined, texts not said yet that are said in
any language when they are shown. The loop's catalogue (texts/__init__.py) and the offline judge's (judge/texts.py) both
stand on it; each holds only its own tables and what is its own.

Invariants: imports no project module (a leaf: the judge may import it and still import nothing of the loop);
holds no text of its own and no logic beyond looking up and formatting; a table's separator between listed
items is its "list.sep" (Texts.join, Joined); a Catalogue makes one Texts per language, once.
"""
import re

LANGUAGES = ("zh", "en")
CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")


def said(value, say):
    """A value as `say`'s language says it: a Said or a Joined said; any other value (a transcript's own: a list
    argument too) as it is."""
    return value(say) if isinstance(value, (Said, Joined)) else value


class Texts:
    """One language's table, called with a key and its values: `say("guard.spin", times=2)`. A value that is a
    Said or a Joined is said in this language first."""

    def __init__(self, language, table):
        self.language, self.table = language, table

    def __call__(self, name, /, **values):
        return self.table[name].format(**{k: said(v, self) for k, v in values.items()})

    def join(self, items):
        return self.table["list.sep"].join(map(str, items))


class Catalogue:
    """One owner's tables, {language: table}: `of(language)` is that language's Texts (made once per language).
    A language without a table is `fallback`'s when one is given, else a ValueError."""

    def __init__(self, tables, fallback=None):
        self.tables, self.fallback, self._made = tables, fallback, {}

    def of(self, language="zh"):
        """The catalogue of `language` (made once per language)."""
        if language not in self.tables:
            if self.fallback is None:
                raise ValueError(f"language={language!r}: not one of {', '.join(LANGUAGES)}")
            language = self.fallback
        texts = self._made.get(language)
        if texts is None:
            texts = self._made[language] = Texts(language, self.tables[language])
        return texts


class Said:
    """A text not said yet: a catalogue key and its values (a value may be a Said or a Joined itself), said in
    any language when it is shown (`said(say)`); str() says it with `home`, the owner's Chinese Texts (each
    owner's Said sets it). Errors carry one, so the layer that knows the language renders them."""

    home = None

    def __init__(self, name, /, **values):
        self.name, self.values = name, values

    def __call__(self, say):
        return say(self.name, **{k: said(v, say) for k, v in self.values.items()})

    def __str__(self):
        return self(self.home)

    def __repr__(self):
        return f"Said({self.name!r}, {self.values!r})"


class Joined:
    """Texts said one after another, with the separator `sep` names in the catalogue (None: nothing between them).
    Empty when it has no items, as a joined string would be; str() says it with `home`, as Said does."""

    home = None

    def __init__(self, items, sep="list.sep"):
        self.items, self.sep = list(items), sep

    def __call__(self, say):
        return ("" if self.sep is None else say(self.sep)).join(str(said(i, say)) for i in self.items)

    def __bool__(self):
        return bool(self.items)

    def __str__(self):
        return self(self.home)


def told(error, say):
    """What an error says, in `say`'s language: its Said when it carries one (as its first argument, or as a
    catalogue key and values: config.PolicyError), else its message as it is."""
    if getattr(error, "catalogue_key", None):
        return Said(error.catalogue_key, **error.values)(say)
    message = error.args[0] if error.args else None
    return message(say) if isinstance(message, Said) else str(error)
