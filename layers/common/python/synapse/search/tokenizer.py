"""The tokenizer: what full-text search sees of a memory (`search_text`) and its terms (`tokenize`).

NFKC, lower case; Latin/digit words (stop words and possessive 's dropped, light English suffix
folding: plural, -ing, -ed, final -e); runs of Thai (no spaces between words) become character-cluster
bigrams and trigrams, where a cluster is a base character with its vowel and tone marks attached.
The stop words are a data file beside this module (`stopwords.txt`), read once, on first use.
Pure Python: no numpy, fast to import. docs/ranking.md has the measurements behind each choice.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import cache, lru_cache
from pathlib import Path

__all__ = ["search_text", "stopwords", "tokenize"]

_STOPWORDS_FILE = Path(__file__).with_name("stopwords.txt")


@cache
def stopwords() -> frozenset[str]:
    """The English stop words (`stopwords.txt`: words separated by white space, # to the end of a line
    is a comment)."""
    text = _STOPWORDS_FILE.read_text(encoding="utf-8")
    return frozenset(word for line in text.splitlines() for word in line.partition("#")[0].split())


_THAI_DIGITS = str.maketrans("๐๑๒๓๔๕๖๗๘๙", "0123456789")
# Possessive 's (ASCII or typographic apostrophe) at the end of a word: "Alice's" → "alice".
_POSSESSIVE = re.compile(r"(?<=\w)['’]s\b")
# Thai block runs, or runs of other letters/digits (underscore splits words: "user_name").
_TOKEN = re.compile(r"([\u0e00-\u0e7f]+)|([^\W_\u0e00-\u0e7f]+)")
# Thai characters written after their base character: above/below vowels, tone marks, thanthakhat.
_THAI_MARKS = frozenset(
    "\u0e31\u0e34\u0e35\u0e36\u0e37\u0e38\u0e39\u0e3a\u0e47\u0e48\u0e49\u0e4a\u0e4b\u0e4c\u0e4d\u0e4e"
)
# Thai signs that are not letters: paiyannoi, maiyamok (repeat), fongman, angkhankhu, khomut.
_THAI_PUNCT = re.compile("[\u0e2f\u0e46\u0e4f\u0e5a\u0e5b]+")


def _thai_clusters(run: str) -> list[str]:
    clusters: list[str] = []
    for ch in run:
        if ch in _THAI_MARKS and clusters:
            clusters[-1] += ch
        else:
            clusters.append(ch)
    return clusters


def _thai_ngrams(run: str, out: list[str]) -> None:
    for part in _THAI_PUNCT.split(run):
        clusters = _thai_clusters(part)
        n = len(clusters)
        if n == 0:
            continue
        if n == 1:
            out.append(clusters[0])
            continue
        for i in range(n - 1):
            out.append(clusters[i] + clusters[i + 1])
            if i + 2 < n:
                out.append(clusters[i] + clusters[i + 1] + clusters[i + 2])


_VOWELS = frozenset("aeiouy")


@lru_cache(maxsize=1 << 15)  # words repeat across memories: building BM25 over 10k folds 300k words
def _fold(word: str) -> str:
    """Light English suffix folding, so "hikes", "hiking" and "hiked" meet "hike".

    Not a real stemmer: plural -s/-es/-ies, then -ing or -ed (with a doubled final consonant
    undone: "running" → "run"), then a final -e. Applied the same way to documents and queries, so
    only consistency matters. ASCII words longer than three letters only: other languages and
    short words are left alone.
    """
    w = word
    if len(w) <= 3 or not w.isascii() or not w.isalpha():
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith(("ches", "shes", "ses", "xes", "zes", "oes")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        stem = w[: -len(suffix)]
        if w.endswith(suffix) and len(stem) >= 3 and not _VOWELS.isdisjoint(stem):
            w = stem
            if w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]
            break
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def tokenize(text: str) -> list[str]:
    """Terms of `text` for full-text ranking, in order (with repeats).

    >>> tokenize("Alice's Docker swarms")
    ['alic', 'docker', 'swarm']
    >>> tokenize("ผมชอบ Docker")[-1]
    'docker'
    """
    stop = stopwords()
    norm = unicodedata.normalize("NFKC", text).lower().translate(_THAI_DIGITS)
    norm = _POSSESSIVE.sub("", norm)
    out: list[str] = []
    for thai, word in _TOKEN.findall(norm):
        if thai:
            _thai_ngrams(thai, out)
        elif word not in stop:
            out.append(_fold(word))
    return out


def search_text(content: str, key: str, tags: Sequence[str]) -> str:
    """What full-text search sees of a memory: its content, its key's words and its tags."""
    return f"{content} {key.replace('_', ' ')} {' '.join(tags)}"
