"""Lucene's English analyzer in Python: the tokens Anserini/Pyserini index and search.

Lucene's ``EnglishAnalyzer`` (Anserini's default) is a chain of four steps, applied here
in the same order:

1. ``StandardTokenizer``: Unicode word segmentation (UAX #29 word-break rules). A token
   is a run of letters and digits; a letter run may go on across one of
   ``' . : · ’ ‘`` when a letter follows (``don't``, ``u.s.a``, ``s:t``), a digit run across
   one of ``' . , ;`` when a digit follows (``3.5``, ``1,299``, ``1;2``); letters and digits
   join directly (``3.5mm``, ``v1.2``), ``_`` joins anything (``a_b``); combining marks and
   format characters (soft hyphen, zero-width joiner) stay inside the token they follow.
   Each Han ideograph and each hiragana is a token of its own, katakana runs are tokens
   that do not join Latin letters (``アイスcream`` -> ``アイス``, ``cream``), runs of Thai,
   Lao, Myanmar and Khmer are one token each, and an emoji (with its modifiers and
   zero-width-joined partners) is a token. Tokens longer than 255 characters are cut
   into pieces of 255. Everything else (punctuation, symbols, whitespace) separates.
2. ``EnglishPossessiveFilter``: a trailing ``'s`` (or ``’s``, ``＇s``) is removed.
3. ``LowerCaseFilter``: Java's per-character lower case (so ``İ`` -> ``i`` and ``Σ`` is
   always ``σ``, where Python's ``str.lower`` gives ``i̇`` and a final ``ς``).
4. ``StopFilter`` with Lucene's 33 English stop words, then ``PorterStemFilter``: PyStemmer's
   ``"porter"`` (the published Porter algorithm) plus the three places where Lucene's
   stemmer, Martin Porter's reference code, departs from it (words of one or two letters
   are left alone, ``(m>0) BLI -> BLE`` replaces ``ABLI -> ABLE``, ``(m>0) LOGI -> LOG``;
   see :func:`lucene_porter_departures`).

Differences from Lucene that remain: word-break classes come from Python's
``unicodedata`` general categories (its Unicode version) with fixed ranges for Han,
hiragana, katakana, the South-East Asian scripts and Extended_Pictographic, where Lucene
uses the word-break property tables of its own Unicode version; Hebrew's quote rules are
not applied; the 255-character cut counts code points where Java counts UTF-16 units.
``tests/test_retrieval.py`` compares our tokens with Lucene's own (through Pyserini, when
it and Java are installed): identical on the 1,000 wiki-18 passages and on generated text.
Python's ``re`` tests the large character classes slowly, so ASCII text (most text) goes
through :data:`ASCII_PATTERN`, the same rules written for ASCII; other text through
patterns built from ``unicodedata`` on first use.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Iterable

#: Bumped whenever the analyzer's output changes, so cached indexes are rebuilt.
ANALYZER_VERSION = "lucene-english-2"
#: Lucene's ``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``.
_STOP_WORDS_TEXT = (
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with"
)
LUCENE_STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
#: Lucene's ``StandardTokenizer`` default maximum token length.
MAX_TOKEN_LENGTH = 255

_POSSESSIVES = frozenset({"'s", "’s", "＇s"})
# Word-break properties Lucene's grammar names, as explicit code points (UAX #29).
_MID_LETTER = ":\u00b7\u0387\u055f\u05f4\u2027\ufe13\ufe55\uff1a"
_MID_NUM = ",;\u037e\u0589\u060c\u060d\u066c\u07f8\u2044\ufe10\ufe14\ufe50\ufe54\uff0c\uff1b"
_MID_NUM_LET = ".\u2018\u2019\u2024\ufe52\uff07\uff0e'"  # MidNumLet and Single_Quote
_HAN = (
    (0x2E80, 0x2FDF), (0x3005, 0x3005), (0x3007, 0x3007), (0x3021, 0x3029), (0x3038, 0x303B),
    (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3FFFF),
)  # fmt: skip
_HIRAGANA = ((0x3041, 0x3096), (0x309D, 0x309F), (0x1B001, 0x1B11F), (0x1F200, 0x1F200))
_KATAKANA = (
    (0x3031, 0x3035), (0x309B, 0x309C), (0x30A0, 0x30FA), (0x30FC, 0x30FF), (0x31F0, 0x31FF),
    (0x32D0, 0x32FE), (0x3300, 0x3357), (0xFF66, 0xFF9D), (0x1B000, 0x1B000),
)  # fmt: skip
_SOUTH_EAST_ASIAN = (
    (0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x1950, 0x19DF),
    (0x1A20, 0x1AAF), (0xA9E0, 0xA9FF), (0xAA60, 0xAADF), (0x11700, 0x1174F),
)  # fmt: skip
#: Unicode's Extended_Pictographic property: Lucene makes a token of each such symbol
#: (with its modifiers, variation selectors and zero-width-joined partners).
_EXTENDED_PICTOGRAPHIC = (
    "A9 AE 203C 2049 2122 2139 2194-2199 21A9-21AA 231A-231B 2328 2388 23CF 23E9-23F3 23F8-23FA "
    "24C2 25AA-25AB 25B6 25C0 25FB-25FE 2600-2605 2607-2612 2614-2685 2690-2705 2708-2712 2714 "
    "2716 271D 2721 2728 2733-2734 2744 2747 274C 274E 2753-2755 2757 2763-2767 2795-2797 27A1 "
    "27B0 27BF 2934-2935 2B05-2B07 2B1B-2B1C 2B50 2B55 3030 303D 3297 3299 1F000-1F0FF "
    "1F10D-1F10F 1F12F 1F16C-1F171 1F17E-1F17F 1F18E 1F191-1F19A 1F1AD-1F1E5 1F201-1F20F 1F21A "
    "1F22F 1F232-1F23A 1F23C-1F23F 1F249-1F3FA 1F400-1F53D 1F546-1F64F 1F680-1F6FF 1F774-1F77F "
    "1F7D5-1F7FF 1F80C-1F80F 1F848-1F84F 1F85A-1F85F 1F888-1F88F 1F8AE-1F8FF 1F90C-1F93A "
    "1F93C-1F945 1F947-1FAFF 1FC00-1FFFD"
)
_REGIONAL_INDICATORS = (0x1F1E6, 0x1F1FF)
#: Circled and squared Latin letters: symbols by category, letters to word breaking.
_LETTER_SYMBOLS = ((0x24B6, 0x24E9), (0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189))
_EMOJI_MODIFIERS = (0x1F3FB, 0x1F3FF)
_LAST_SCANNED = 0x3FFFF  # planes 0-3 hold every letter and digit; plane 14 is added by hand


def _char_class(ranges: Iterable[tuple[int, int]], limit: int) -> str:
    """A regex character class body (no brackets) for code point ranges, cut below ``limit``."""
    escape = lambda code: re.escape(chr(code))  # noqa: E731
    parts = [(low, min(high, limit - 1)) for low, high in ranges if low < limit]
    return "".join(escape(a) if a == b else f"{escape(a)}-{escape(b)}" for a, b in parts)


def _ranges(text: str) -> list[tuple[int, int]]:
    """``"A9 2194-2199"`` -> ``[(0xA9, 0xA9), (0x2194, 0x2199)]``."""
    pairs = (item.partition("-") for item in text.split())
    return [(int(low, 16), int(high or low, 16)) for low, _, high in pairs]


_BY_CATEGORY = {
    **dict.fromkeys(("Mn", "Mc", "Me", "Cf"), "X"),
    **dict.fromkeys(("Lu", "Ll", "Lt", "Lm", "Lo", "Nl"), "L"),
    "Nd": "N",
    "Pc": "E",
}
# Blocks whose letters (and, for some, marks or symbols) form tokens of their own kind.
_BLOCK_CLASSES = {
    1: ("S", frozenset({"Lo", "Lm", "Mn", "Mc"})),
    2: ("H", frozenset({"Lo", "Lm", "Nl", "So"})),
    3: ("G", frozenset({"Lo", "Lm"})),
    4: ("K", frozenset({"Lo", "Lm", "Sk", "So"})),
}


def _character_classes() -> dict[str, list[tuple[int, int]]]:
    """Code point ranges of each word-break class the tokenizer needs, from ``unicodedata``:
    L letters, N digits, X marks and format characters (kept inside tokens), E connectors,
    K katakana, H Han, G hiragana, S South-East Asian, Y pictographs, M emoji modifiers,
    R regional indicators."""
    blocks = bytearray(_LAST_SCANNED + 1)  # which special range each code point is in (0: none)
    for value, ranges in (
        (7, _ranges(_EXTENDED_PICTOGRAPHIC)), (5, _LETTER_SYMBOLS), (6, [_EMOJI_MODIFIERS]), (1, _SOUTH_EAST_ASIAN),
        (2, _HAN), (3, _HIRAGANA), (4, _KATAKANA),
    ):  # fmt: skip
        for low, high in ranges:
            if low <= _LAST_SCANNED:
                high = min(high, _LAST_SCANNED)
                blocks[low : high + 1] = bytes([value]) * (high - low + 1)
    # Pictographs and circled letters take their class unless their category gives one;
    # emoji modifiers are always Extend.
    by_block = {7: "Y", 5: "L", 6: "X"}
    runs: dict[str, list[tuple[int, int]]] = {name: [] for name in "LNXEKHGSYMR"}
    category, previous, start = unicodedata.category, None, 0
    for code in range(_LAST_SCANNED + 2):
        if code > _LAST_SCANNED:
            label = None
        else:
            kind, group = blocks[code], category(chr(code))
            label = _BY_CATEGORY.get(group)
            if kind in _BLOCK_CLASSES and group in _BLOCK_CLASSES[kind][1]:
                label = _BLOCK_CLASSES[kind][0]
            elif kind in by_block and (label is None or kind == 6):
                label = by_block[kind]
            elif code == 0x200B:  # zero width space: a separator, though a format character
                label = None
            elif code == 0x202F:  # narrow no-break space joins like "_" (ExtendNumLet)
                label = "E"
        if label != previous:
            if previous is not None:
                runs[previous].append((start, code - 1))
            previous, start = label, code
    runs["X"] += [(0xE0020, 0xE007F), (0xE0100, 0xE01EF)]  # tags, variation selectors
    runs["M"] = [_EMOJI_MODIFIERS]
    runs["R"] = [_REGIONAL_INDICATORS]
    return runs


def _build_pattern(classes: dict[str, list[tuple[int, int]]], limit: int) -> re.Pattern[str]:
    """The tokenizer regex for texts whose code points are all below ``limit``."""
    c = {name: _char_class(ranges, limit) for name, ranges in classes.items()}
    L, N, X, E, K = c["L"], c["N"], c["X"], c["E"], c["K"]
    mid_letter = re.escape(_MID_LETTER + _MID_NUM_LET)
    mid_num = re.escape(_MID_NUM + _MID_NUM_LET)
    # Letters (digits) run on, also across one "mid" character when a letter (digit)
    # follows; letter and digit runs join; "_"-like connectors join anything.
    letter_run = f"[{L}][{L}{X}]*(?:[{mid_letter}][{X}]*[{L}][{L}{X}]*)*"
    digit_run = f"[{N}][{N}{X}]*(?:[{mid_num}][{X}]*[{N}][{N}{X}]*)*"
    group = f"(?:[{K}][{K}{X}]*|(?:{letter_run}|{digit_run})+)"
    link = f"[{E}][{E}{X}]*"
    # A leading connector run starts only where no connector precedes it (else a long run
    # of "_" would be re-scanned from each of its characters).
    word = f"(?:(?<![{E}]){link})?{group}(?:{link}{group})*(?:{link})?"
    emoji_starts = [f"[{c['Y']}{c['M']}]", "[#*]\\ufe0f?\\u20e3"] + ([f"[{c['R']}]{{2}}"] if c["R"] else [])
    emoji = f"\\u200d?(?:{'|'.join(emoji_starts)})(?:[{X}]|(?<=\\u200d)[{c['Y']}])*"
    return re.compile(f"{word}|[{c['S']}][{c['S']}{X}]*|[{c['H']}][{X}]*|[{c['G']}][{X}]*|{emoji}")


#: The tokenizer's rules for lower-cased ASCII text (letters a-z, digits, "_" joins, mids ``:.'`` between
#: letters and ``,;.'`` between digits), which needs no large character classes.
ASCII_PATTERN = re.compile(
    r"(?<!_)_*[a-z0-9][a-z0-9_]*(?:(?:(?<=[a-z])[:.'](?=[a-z])|(?<=[0-9])[,;.'](?=[0-9]))[a-z0-9_]+)*"
)


@functools.cache
def unicode_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The tokenizer regex for Basic-Multilingual-Plane texts, and for any text.

    Python's ``re`` tests a character class's BMP members with one bitmap lookup but its
    other members one range at a time, so texts without supplementary characters (almost
    all) use a pattern whose classes have none; ASCII texts use :data:`ASCII_PATTERN`. All
    give the same tokens where they apply (a test checks it). Built on the first non-ASCII
    text (~0.2 s).
    """
    classes = _character_classes()
    return _build_pattern(classes, 0x10000), _build_pattern(classes, 0x110000)


_SUPPLEMENTARY = re.compile("[\U00010000-\U0010ffff]")


def java_lower(text: str) -> str:
    """Lower case as Java's ``Character.toLowerCase`` does it, character by character."""
    if "\u0130" in text:
        text = text.replace("\u0130", "i")
    if "\u03a3" in text:
        text = text.replace("\u03a3", "\u03c3")
    return text.lower()


def split_words(text: str) -> list[str]:
    """Steps 1-3: tokens, possessives removed, lower-cased (no stop words, no stemming)."""
    text = java_lower(text)
    if text.isascii():
        words = ASCII_PATTERN.findall(text)
    else:
        bmp, full = unicode_patterns()
        words = (full if _SUPPLEMENTARY.search(text) else bmp).findall(text)
    if len(text) > MAX_TOKEN_LENGTH and max(map(len, words), default=0) > MAX_TOKEN_LENGTH:
        words = [word[i : i + MAX_TOKEN_LENGTH] for word in words for i in range(0, len(word), MAX_TOKEN_LENGTH)]
    if "'s" in text or "’s" in text or "＇s" in text:
        words = [word[:-2] if word[-2:] in _POSSESSIVES else word for word in words]
    return words


def _consonant(word: str, i: int) -> bool:
    """Porter's consonant: not a, e, i, o, u, and ``y`` only after a vowel or at the start."""
    char = word[i]
    if char in "aeiou":
        return False
    return char != "y" or i == 0 or not _consonant(word, i - 1)


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``[C](VC){m}[V]``."""
    m, previous_vowel = 0, False
    for i in range(len(stem)):
        consonant = _consonant(stem, i)
        m += consonant and previous_vowel
        previous_vowel = not consonant
    return m


def _ends_cvc(stem: str) -> bool:
    """Porter's ``*o``: consonant-vowel-consonant at the end, the last not w, x or y."""
    n = len(stem)
    return (
        n >= 3 and _consonant(stem, n - 1) and not _consonant(stem, n - 2) and _consonant(stem, n - 3)
        and stem[-1] not in "wxy"
    )  # fmt: skip


def lucene_porter_departures(stem: str) -> str:
    """Finish a published-Porter stem ending in ``i`` as Lucene's ``PorterStemmer`` would.

    Lucene's stemmer is Martin Porter's reference code, which departs from the published
    algorithm (PyStemmer's ``"porter"``) in step 2: ``(m>0) BLI -> BLE`` replaces
    ``(m>0) ABLI -> ABLE``, and ``(m>0) LOGI -> LOG`` is added. A published-Porter stem
    that still ends in ``bli``/``logi`` is the word as step 2 saw it (steps 3-5 do not touch
    such endings), so the departure is applied here, then steps 4 (``(m>1) ABLE, IBLE ->``)
    and 5 (``(m>1) E ->``; ``(m=1 and not *o) E ->``) on its result. (Its third departure,
    leaving words of one or two letters alone, is applied by the analyzer.)
    """
    if stem.endswith("logi") and _measure(stem[:-4]) > 0:
        return stem[:-1]
    if not stem.endswith("bli") or _measure(stem[:-3]) == 0:
        return stem
    word = stem[:-3] + "ble"
    if word.endswith(("able", "ible")) and _measure(word[:-4]) > 1:
        return word[:-4]
    m = _measure(word[:-1])
    return word[:-1] if m > 1 or (m == 1 and not _ends_cvc(word[:-1])) else word


class LuceneEnglishAnalyzer:
    """``analyzer(text) -> list[str]``: the tokens Lucene's English analyzer makes of ``text``.

    ``stopwords``: Lucene's 33 (default), another collection, or ``None`` for none.
    ``stemmer``: a PyStemmer algorithm name (``"porter"``: Lucene's, with its departures
    applied) or ``None``. Stems are memoised (up to :attr:`STEM_CACHE_SIZE` words). Safe to
    share between threads (each thread gets its own stemmer).
    """

    STEM_CACHE_SIZE = 200_000

    def __init__(self, stopwords: Iterable[str] | None = LUCENE_STOP_WORDS, stemmer: str | None = "porter") -> None:
        self.stopwords = frozenset(stopwords or ())
        self.stemmer_name = stemmer
        self._local = threading.local()
        self._stems: dict[str, str] = {}
        if stemmer is not None:
            self._stemmer()  # fail now, not at the first query, if PyStemmer is missing

    @property
    def signature(self) -> str:
        """Identifies the analyzer's output, for cache keys."""
        return f"{ANALYZER_VERSION}|{self.stemmer_name}|{','.join(sorted(self.stopwords))}"

    def _stemmer(self):
        stemmer = getattr(self._local, "stemmer", None)
        if stemmer is None:
            try:
                import Stemmer
            except ImportError as error:
                raise ImportError("the Lucene English analyzer needs PyStemmer: pip install PyStemmer") from error
            # No PyStemmer cache: ours (a dict) is faster, and its cache slows down unseen words.
            stemmer = self._local.stemmer = Stemmer.Stemmer(self.stemmer_name, 0)
        return stemmer

    def term(self, word: str) -> str | None:
        """What a word of :func:`split_words` becomes: ``None`` for a stop word, else its stem."""
        return None if word in self.stopwords else self.stem(word)

    def stem(self, word: str) -> str:
        """One analysed word's stem (Lucene's Porter leaves words of 1-2 letters alone)."""
        stem = self._stems.get(word)
        if stem is None:
            if self.stemmer_name is None:
                return word
            if self.stemmer_name == "porter":
                stem = word if len(word) <= 2 else self._stemmer().stemWord(word)
                if stem[-1:] == "i":
                    stem = lucene_porter_departures(stem)
            else:
                stem = self._stemmer().stemWord(word)
            if len(self._stems) >= self.STEM_CACHE_SIZE:
                self._stems.clear()
            self._stems[word] = stem
        return stem

    def __call__(self, text: str) -> list[str]:
        stop = self.stopwords
        if self.stemmer_name is None:
            return [word for word in split_words(text) if word not in stop]
        cached, stem = self._stems.get, self.stem
        return [cached(word) or stem(word) for word in split_words(text) if word not in stop]

    def many(self, texts: Iterable[str]) -> list[list[str]]:
        """``[analyzer(text) for text in texts]``."""
        return [self(text) for text in texts]
