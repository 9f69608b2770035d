"""What the loop and the command line say, in each language an agent can have: one table per language (`ZH` in
texts/zh.py, `EN` in texts/en.py), the same keys in each, said through this catalogue (`of(language)`). Guard
errors, nudges, the memory block, the planning tools' descriptions and results, validation problems, cut notes,
the final-answer prompt, the lines the command line prints and its help: every text our side shows a model or a
person is in those tables. Here are the lookup and what the loop's texts need of their own: its Said (str() in
Chinese), and said_of (an error as a Said).

Invariants: imports no project module but texts/catalogue.py (the leaf that says any catalogue) and its two tables (a
leaf below calls.py); holds no logic beyond formatting; `ZH` and `EN` have exactly the same keys and placeholders,
and no value of `EN` holds a CJK character. A tool's own texts (its description, its errors) belong to the agent
that declares it, not here.
"""
from . import catalogue
from .catalogue import CJK as CJK, LANGUAGES as LANGUAGES, Catalogue, told as told     # part of this API (texts.told)
from .en import EN
from .zh import ZH

CATALOGUE = Catalogue({"zh": ZH, "en": EN})
of = CATALOGUE.of
ZH_TEXTS = of("zh")


class Said(catalogue.Said):
    """A loop text not said yet (catalogue.Said): str() says it in the loop's Chinese."""

    home = ZH_TEXTS


def said_of(error):
    """An error as a Said when it can be said in any language, else the error itself."""
    if getattr(error, "catalogue_key", None):
        return Said(error.catalogue_key, **error.values)
    said = error.args[0] if error.args else None
    return said if isinstance(said, catalogue.Said) else error
