"""Snippets of a page's body made from token positions worked out when the search index is built.

FTS5's ``snippet()`` tokenizes the whole column it highlights, with the porter stemmer, for every row it is asked
for (to find sentence starts and to place the highlights): over a page's body that cost about twenty times the
ranking. Here each body is tokenized once, when the index is built: each token's place in the text, its term as
FTS5 indexed it (read back from the index itself, so the stemming is FTS5's own) and where sentences start. A
query's snippet then only looks up where its terms occur, and chooses and writes the window by FTS5's own rules:

- a window of ``SNIPPET_TOKENS`` tokens scores 1,000 for each distinct query phrase starting in it and 1 for each
  repeat; the candidates are, for each match in order, the window starting at it (then moved so its matches sit
  in the middle, within the body) and the window starting at the sentence the match is in (worth 100 more, 120
  for the body's first sentence, and not moved); the first with the highest score wins;
- each match in the window is written between ``**`` (overlapping matches as one), `` … `` is written where the
  body goes on before or after the window, and a window reaching the body's end takes the text after its last
  token too.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from dataclasses import dataclass

# unicode61's tokens: runs of letters and digits (an underscore separates, as any other punctuation).
TOKEN = re.compile(r"[^\W_]+")
SNIPPET_TOKENS = 16
ELLIPSIS = " … "
MARK = "**"
_BLANK = " \t\n\r"

Phrase = tuple[str, ...]
Match = tuple[int, int, int]  # first position, token count, phrase number


def _sentence_starts(text: str, spans: list[tuple[int, int]]) -> list[int]:
    """The positions that start a sentence as FTS5 counts them: the first token, and a token after blanks that
    follow a full stop or a colon."""
    starts = [0] if spans else []
    for pos in range(1, len(spans)):
        i = spans[pos][0] - 1
        while i >= 0 and text[i] in _BLANK:
            i -= 1
        if i != spans[pos][0] - 1 and i >= 0 and text[i] in ".:":
            starts.append(pos)
    return starts


@dataclass(frozen=True)
class Body:
    text: str
    spans: list[tuple[int, int]]  # each token's start and end in ``text``
    terms: list[str]  # each token's indexed term
    where: dict[str, list[int]]  # term -> the positions holding it, ascending
    sentences: list[int]  # positions starting a sentence, ascending

    @classmethod
    def aligned(cls, text: str, terms: dict[int, str]) -> Body | None:
        """The body with ``terms`` (position -> term, as the index holds them) placed on its tokens, or None when
        this tokenization does not find the same tokens (the caller then asks FTS5)."""
        spans = [m.span() for m in TOKEN.finditer(text)]
        if len(spans) != len(terms) or any(p not in terms for p in range(len(spans))):
            return None
        ordered = [terms[p] for p in range(len(spans))]
        where: defaultdict[str, list[int]] = defaultdict(list)
        for pos, term in enumerate(ordered):
            where[term].append(pos)
        return cls(text, spans, ordered, dict(where), _sentence_starts(text, spans))

    def matches(self, phrases: list[Phrase]) -> list[Match]:
        """Each occurrence of a phrase, in order of position (then of phrase), as FTS5 lists its instances."""
        found = []
        for n, phrase in enumerate(phrases):
            if not phrase:
                continue
            size = len(phrase)
            for pos in self.where.get(phrase[0], ()):
                if size == 1 or tuple(self.terms[pos : pos + size]) == phrase:
                    found.append((pos, size, n))
        found.sort(key=lambda m: (m[0], m[2]))
        return found

    def snippet(self, phrases: list[Phrase], size: int = SNIPPET_TOKENS) -> str:
        found = self.matches(phrases)
        return self._write(found, self._window(found, size), size)

    def _score(self, found: list[Match], first_pos: int, size: int) -> int:
        """The score of the window starting at ``first_pos``."""
        score = 0
        seen: set[int] = set()
        for pos, _length, n in found[bisect.bisect_left(found, (first_pos,)) :]:
            if pos >= first_pos + size:
                break
            score += 1 if n in seen else 1000
            seen.add(n)
        return score

    def _window(self, found: list[Match], size: int) -> int:
        """The window's first position. The windows starting at each match are scored by sliding one window over
        the matches (each enters and leaves once); a sentence's window is scored once however many matches it
        holds."""
        count, total = len(self.spans), len(found)
        starts = self.sentences if self.sentences and count > size else None
        best, start = 0, 0
        held: dict[int, int] = {}  # phrase -> its matches in the window
        left = right = 0
        sentences: dict[int, int] = {}
        for pos, _length, _n in found:
            while found[left][0] < pos:  # the window now starts at ``pos``
                phrase = found[left][2]
                held[phrase] -= 1
                if not held[phrase]:
                    del held[phrase]
                left += 1
            while right < total and found[right][0] < pos + size:
                phrase = found[right][2]
                held[phrase] = held.get(phrase, 0) + 1
                right += 1
            distinct = len(held)
            score = 999 * distinct + right - left
            if score > best:
                last = found[right - 1][0] + found[right - 1][1]
                shift = size - (last - pos)
                adjusted = pos - (shift // 2 if shift >= 0 else -(-shift // 2))  # C's division, toward zero
                best, start = score, max(0, min(adjusted, count - size))
            if starts is not None:
                sentence = starts[bisect.bisect_right(starts, pos) - 1]
                if sentence < pos:
                    score = sentences.get(sentence, -1)
                    if score < 0:
                        score = sentences[sentence] = self._score(found, sentence, size) + (
                            120 if sentence == 0 else 100
                        )
                    if score > best:
                        best, start = score, sentence
        return start

    def _write(self, found: list[Match], start: int, size: int) -> str:
        text, spans, count = self.text, self.spans, len(self.spans)
        ranges: list[list[int]] = []  # overlapping matches as one: [first, last] positions
        for pos, length, _n in found:
            if ranges and pos <= ranges[-1][1]:
                ranges[-1][1] = max(ranges[-1][1], pos + length - 1)
            else:
                ranges.append([pos, pos + length - 1])
        k = 0
        while k < len(ranges) and ranges[k][0] < start:
            k += 1
        end = start + size - 1
        out = [ELLIPSIS] if start > 0 else []
        offset = spans[start][0] if 0 < start < count else 0
        for pos in range(start, min(end, count - 1) + 1):
            left, right = spans[pos]
            if k < len(ranges) and pos == ranges[k][0]:
                out += [text[offset:left], MARK]
                offset = left
            if k < len(ranges) and pos == ranges[k][1]:
                out += [text[offset:right], MARK]
                offset = right
                k += 1
            if pos == end:
                out.append(text[offset:right])
                offset = right
                if k < len(ranges) and ranges[k][0] <= pos < ranges[k][1]:
                    out.append(MARK)
        out.append(text[offset:] if end >= count - 1 else ELLIPSIS)
        return "".join(out)
