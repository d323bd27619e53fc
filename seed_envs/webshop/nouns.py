"""Which words of a product name are nouns: the input of WebShop's type reward.

The benchmark tags both product names with spaCy's ``en_core_web_sm`` and keeps the
lower-cased text of tokens whose coarse part of speech is ``NOUN`` or ``PROPN``. The
official spaCy models are not on PyPI, so two implementations exist and every reward
says which one ran (``PurchaseReward.parts["type_matcher"]``, ``info["type_matcher"]``):

``spacy:<package>-<version>``
    spaCy with an installed model package (default ``en_core_web_sm``; another name,
    such as a re-upload, through ``WEBSHOP_SPACY_MODEL`` or ``type_matcher="spacy:NAME"``).
    This is the benchmark's own rule.
``lexicon-v1``
    A dependency-free approximation: spaCy-like tokenisation, then every token with a
    letter counts as a noun unless it is a closed-class word (determiner, pronoun,
    preposition, conjunction, auxiliary, common adverb or adjective). Product names are
    mostly title-cased noun phrases, which the spaCy model tags NOUN/PROPN almost
    throughout, so the two agree on most names but not all. It is used only when
    spaCy or its model is missing (``type_matcher="auto"``) or when asked for.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from typing import Protocol

logger = logging.getLogger(__name__)

DEFAULT_SPACY_MODEL = "en_core_web_sm"
SPACY_MODEL_ENV = "WEBSHOP_SPACY_MODEL"
NOUN_TAGS = ("PNOUN", "NOUN", "PROPN")  # the benchmark's own list, "PNOUN" included
#: Set once the fallback warning has been given; worker processes started afterwards inherit
#: it and log the fallback at debug level instead of repeating the warning.
FALLBACK_WARNED_ENV = "SEED_WEBSHOP_FALLBACK_WARNED"


class TypeMatcher(Protocol):
    """Finds the nouns of a product name (lower-cased, in order, repeats kept)."""

    name: str

    def nouns(self, text: str) -> list[str]: ...


class SpacyNouns:
    """Nouns as tagged by a spaCy pipeline (the benchmark's rule)."""

    def __init__(self, model: str) -> None:
        import spacy

        self._nlp = spacy.load(model)
        meta = self._nlp.meta
        self.name = f"spacy:{meta.get('lang', 'xx')}_{meta.get('name', model)}-{meta.get('version', '?')}"
        self._cached = functools.lru_cache(maxsize=200_000)(self._tag)

    def _tag(self, text: str) -> tuple[str, ...]:
        return tuple(t.text.lower() for t in self._nlp(text) if t.pos_ in NOUN_TAGS)

    def nouns(self, text: str) -> list[str]:
        return list(self._cached(text))


_CLOSED_CLASS = frozenset(
    """
    a an the this that these those my your his her its our their some any each every no
    all both either neither another such what which whose whatever
    i me you he him she it we us they them myself yourself itself ourselves themselves
    of in on at by for with without within into onto from to up down over under above
    below between among through during before after about against around along across
    behind beyond near off out per plus than via upon toward towards inside outside
    and or but nor so yet if because while although though unless whereas as
    is are was were be been being am do does did doing have has had having will would
    shall should can could may might must
    not very too also just only more most less least much many few several
    new old great good best better extra super ultra high low large small big little
    long short soft hard easy fast free full half light heavy hot cold warm cool
    """.split()  # noqa: SIM905
)
_TOKEN = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)*|[^\sA-Za-z0-9]")


class LexiconNouns:
    """The dependency-free approximation described in the module docstring."""

    name = "lexicon-v1"

    @staticmethod
    @functools.lru_cache(maxsize=200_000)
    def _tag(text: str) -> tuple[str, ...]:
        nouns = []
        for token in _TOKEN.findall(text):
            lower = token.lower()
            if any(c.isalpha() for c in token) and lower not in _CLOSED_CLASS:
                nouns.append(lower)
        return tuple(nouns)

    def nouns(self, text: str) -> list[str]:
        return list(self._tag(text))


@functools.cache
def get_type_matcher(kind: str = "auto") -> TypeMatcher:
    """The type matcher for ``kind``: ``"auto"``, ``"spacy"``, ``"spacy:MODEL"`` or ``"lexicon"``.

    ``auto`` uses spaCy when spaCy and the model are installed and otherwise the lexicon
    approximation, with a warning (once per process tree: processes started after it
    only log it at debug level). ``spacy`` raises an ImportError/OSError that says how
    to install the model. One matcher is built per process and kind.
    """
    if kind == "lexicon":
        return LexiconNouns()
    if kind.startswith("spacy"):
        model = kind.partition(":")[2] or os.environ.get(SPACY_MODEL_ENV) or DEFAULT_SPACY_MODEL
        try:
            return SpacyNouns(model)
        except (ImportError, OSError) as error:
            raise type(error)(
                f"WebShop's type reward needs spaCy and the model {model!r}: "
                "`pip install spacy` and then `seed data webshop --spacy-model` "
                "(or `python -m spacy download en_core_web_sm`), "
                f"or set {SPACY_MODEL_ENV} to an installed model package. Original error: {error}"
            ) from error
    if kind != "auto":
        raise ValueError(f"unknown type_matcher {kind!r}; expected auto, spacy, spacy:MODEL or lexicon")
    try:
        return get_type_matcher("spacy")
    except (ImportError, OSError) as error:
        quiet = FALLBACK_WARNED_ENV in os.environ
        os.environ[FALLBACK_WARNED_ENV] = "1"
        logger.log(
            logging.DEBUG if quiet else logging.WARNING,
            "WebShop type reward: spaCy model unavailable (%s); using the %s approximation. "
            "Rewards can differ from the benchmark's; see seed_envs/webshop/README.md.",
            str(error).splitlines()[0],
            LexiconNouns.name,
        )
        return LexiconNouns()
