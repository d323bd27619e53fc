"""Lucene's one-byte document lengths, its float32 BM25 arithmetic and Anserini's tie rule
(seed_envs.retrieval.lucene), and the ranking of Bm25Index by score then id. No Java needed:
the expected values are derived by hand from Lucene's and Anserini's algorithms."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from seed_envs.retrieval import lucene
from seed_envs.retrieval.bm25_index import _top_of_row, id_order

# ------------------------------------------------------------------ one-byte lengths

# (length, byte) pairs worked out from SmallFloat.intToByte4: lengths below 24 are their own
# byte; above, byte = 24 + longToInt4(n - 24) keeps the 4 leading bits of n - 24 and its shift.
#   41: m = 17 = 0b10001, shift 1 -> (0b1000 & 7) | (2 << 3) = 16 -> byte 40
#   100: m = 76 = 0b1001100, shift 3 -> (0b1001 & 7) | (4 << 3) = 33 -> byte 57
#   1000: m = 976 = 0b1111010000, shift 6 -> (0b1111 & 7) | (7 << 3) = 63 -> byte 87
#   2^31 - 1: m has 31 bits, shift 27 -> 7 | (28 << 3) = 231 -> byte 255
ENCODED = [(0, 0), (1, 1), (23, 23), (24, 24), (31, 31), (32, 32), (39, 39), (40, 40), (41, 40), (42, 41),
           (43, 41), (100, 57), (1000, 87), (2**31 - 1, 255)]  # fmt: skip
# (byte, length) from byte4ToInt: 24 + int4ToLong(byte - 24), int4ToLong(c) = ((c & 7) | 8) << ((c >> 3) - 1).
#   57: c = 33 -> (1 | 8) << 3 = 72 -> 96;  87: c = 63 -> 15 << 6 = 960 -> 984
#   254: c = 230 -> 14 << 27 -> 1879048216;  255: c = 231 -> 15 << 27 -> 2013265944
DECODED = [(0, 0), (23, 23), (39, 39), (40, 40), (41, 42), (57, 96), (87, 984), (254, 1879048216),
           (255, 2013265944)]  # fmt: skip


def four_leading_bits(n: int) -> int:
    """The length Lucene scores with, stated directly: exact below 24, else 24 plus n - 24 cut
    to its 4 most significant bits."""
    if n < 24:
        return n
    rest = n - 24
    shift = max(0, rest.bit_length() - 4)
    return 24 + ((rest >> shift) << shift)


def test_byte4_known_values():
    lengths, codes = zip(*ENCODED, strict=True)
    assert lucene.int_to_byte4(np.array(lengths)).tolist() == list(codes)
    assert lucene.int_to_byte4(np.array(lengths)).dtype == np.uint8
    codes, lengths = zip(*DECODED, strict=True)
    assert lucene.byte4_to_int(np.array(codes)).tolist() == list(lengths)
    with pytest.raises(ValueError):
        lucene.int_to_byte4(np.array([-1]))


def test_byte4_round_trip_and_length_table():
    table = lucene.LENGTH_TABLE
    assert table.dtype == np.float32 and table.shape == (256,)
    assert np.all(np.diff(table.astype(np.float64)) > 0)  # strictly increasing
    assert lucene.int_to_byte4(lucene.byte4_to_int(np.arange(256))).tolist() == list(range(256))
    lengths = np.concatenate([np.arange(0, 70_000), np.array([10**6, 123_456_789, 2**30, 2**31 - 1])])
    stored = lucene.stored_length(lengths)
    assert stored.tolist() == [four_leading_bits(int(n)) for n in lengths]
    assert np.array_equal(stored[:40], lengths[:40])  # exact below 40 tokens
    assert np.all(stored <= lengths)
    codes = lucene.int_to_byte4(lengths)
    # Truncation: each length lies between its byte's value and the next byte's.
    upper = lucene.byte4_to_int(np.minimum(codes.astype(np.int64) + 1, 255))
    assert np.all((lengths < upper) | (codes == 255))


def test_float32_statistics_follow_lucene():
    assert lucene.average_length(10, 3) == np.float32(10 / 3)
    assert lucene.average_length(0, 0) == 0
    df = np.array([1, 5, 999, 1000])
    idf = lucene.idf(df, 1000)
    assert idf.dtype == np.float32
    np.testing.assert_array_equal(idf, np.float32(np.log(1 + (1000 - df + 0.5) / (df + 0.5))))
    cache = lucene.norm_inverse_cache(np.float32(50.5), 0.9, 0.4)
    assert cache.dtype == np.float32
    expected = 1 / (0.9 * (0.6 + 0.4 * lucene.LENGTH_TABLE.astype(np.float64) / 50.5))
    np.testing.assert_allclose(cache, expected, rtol=1e-6)
    # Lucene's rewrite weight - weight / (1 + tf / norm) of idf * tf / (tf + norm), in float32
    # (lengths of 10, 42 and 536 tokens: float32 loses digits when tf / norm gets tiny).
    denominators = lucene.tf_denominators(np.array([1, 2, 7]), cache[[10, 41, 80]])
    scores = lucene.term_scores(idf[1], denominators)
    norm = 1 / expected[[10, 41, 80]]
    np.testing.assert_allclose(scores, idf[1] * np.array([1, 2, 7]) / (np.array([1, 2, 7]) + norm), rtol=1e-5)
    assert scores.dtype == np.float32 and lucene.clause_weight(3, idf[1]) == np.float32(3) * idf[1]


# ------------------------------------------------------------------ Anserini's tie rule


def f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def tie_adjusted(scores: list[float]) -> list[float]:
    """ScoreTiesAdjusterReranker written out with Python floats rounded to float32 after each
    Java float operation (a second implementation to check the vectorised one against)."""
    out = [f32(s) for s in scores]
    dup = 0
    for i in range(len(out)):
        out[i] = f32(math.floor(out[i] * 1e4 + 0.5) / 1e4)
        if i == 0 or f32(out[i - 1] - out[i]) > f32(1e-4):
            dup = 0
        else:
            dup += 1
            out[i] = f32(out[i] - f32(f32(1e-6) * dup))
    return out


def test_anserini_scores_worked_examples():
    # The example in Anserini's own comment: round to 1e-4, lower the second of a tie by 1e-6.
    got = lucene.anserini_scores(np.array([23.439316, 22.087432, 22.087432, 21.602508]))
    assert got.dtype == np.float32
    assert got.tolist() == [f32(23.4393), f32(22.0874), f32(f32(22.0874) - f32(1e-6)), f32(21.6025)]
    # A run of three: -1e-6, -2e-6; then a clear gap resets.
    got = lucene.anserini_scores(np.array([5.0, 5.0, 5.0, 4.0, 4.0]))
    assert got.tolist() == [5.0, f32(5 - f32(1e-6)), f32(5 - f32(2e-6)), 4.0, f32(4 - f32(1e-6))]
    # Different floats that round to the same 4 decimals count as a tie.
    assert lucene.anserini_scores(np.array([7.00001, 7.00002])).tolist() == [7.0, f32(7 - f32(1e-6))]
    # Halves round up (Java's Math.round), where Python's round would give 1562.
    assert lucene.anserini_scores(np.array([1.40625, 0.15625])).tolist() == [f32(1.4063), f32(0.1563)]
    # The rule looks at neighbours in the given order only: a rise is "within 1e-4" too.
    assert lucene.anserini_scores(np.array([0.5, 2.0])).tolist() == [0.5, f32(2 - f32(1e-6))]
    assert lucene.anserini_scores(np.array([])).tolist() == []
    assert lucene.anserini_scores(np.array([3.14159])).tolist() == [f32(3.1416)]


def test_anserini_scores_equal_a_java_float_emulation():
    rng = np.random.default_rng(7)
    for _ in range(600):
        size = int(rng.integers(1, 60))
        levels = rng.uniform(0.01, 30, size=int(rng.integers(1, 8)))
        scores = rng.choice(levels, size=size) + rng.choice([0, 0, 1e-5, 4e-5, 1e-4, 1.5e-4, 3e-4], size=size)
        scores = np.sort(scores.astype(np.float32))[::-1]  # a ranked list
        assert lucene.anserini_scores(scores).tolist() == tie_adjusted(scores.tolist())


# ------------------------------------------------------------------ ranking: score, then id


def test_order_is_score_then_id_rank():
    scores = np.array([1.0, 3.0, 2.0, 3.0, 1.0, 3.0], dtype=np.float32)
    assert lucene.lucene_order(scores, np.array([5, 4, 3, 2, 1, 0])).tolist() == [5, 3, 1, 2, 4, 0]
    assert lucene.lucene_order(scores, np.arange(6)).tolist() == [1, 3, 5, 2, 0, 4]
    # Ids compare as strings (code points), as Lucene compares their UTF-8 bytes.
    ids = ["2", "10", "1", "b", "B", "10"]
    assert id_order(ids).tolist() == [3, 1, 0, 5, 4, 2]  # "1" < "10" < "10" < "2" < "B" < "b"
    assert id_order(["a", "b", "c"]) is None  # already in order: document order is id order


def test_top_of_row_keeps_k_best_by_score_then_key():
    rng = np.random.default_rng(0)
    for _ in range(300):
        row = rng.integers(0, 4, size=rng.integers(1, 60)).astype(np.float64) / 3
        keys = rng.permutation(row.size)
        k = int(rng.integers(1, 70))
        for tie_keys in (None, keys):
            hits, values = _top_of_row(row, k, tie_keys)
            key = (lambda i: i) if tie_keys is None else tie_keys.__getitem__
            expected = sorted(np.flatnonzero(row > 0).tolist(), key=lambda i: (-np.float32(row[i]), key(i)))[:k]
            assert hits.tolist() == expected
            assert values.dtype == np.float32 and values.tolist() == row[expected].astype(np.float32).tolist()


def test_top_of_row_sees_float32_ties_across_its_cuts():
    """Scores that differ in double but round to one float32 tie, and are ordered by key, even
    when they straddle the first cut (half the best score) or the k-th place."""
    half = 0.5
    row = np.array([1.0, half * (1 + 1e-12), half * (1 - 1e-12), 0.2])
    assert np.float32(row[1]) == np.float32(row[2])
    assert _top_of_row(row, 2, np.array([0, 2, 1, 3]))[0].tolist() == [0, 2]  # the one below half wins the tie
    assert _top_of_row(row, 2)[0].tolist() == [0, 1]
    rng = np.random.default_rng(5)
    for _ in range(300):
        base = rng.choice(np.float32([1.0, 0.75, 0.5, 0.5000001, 0.3, 0.25]), size=int(rng.integers(1, 40)))
        row = base.astype(np.float64) * (1 + rng.choice([0, 1e-9, -1e-9, 3e-8, -3e-8], size=base.size))
        row[rng.random(base.size) < 0.2] = 0
        keys = rng.permutation(row.size)
        k = int(rng.integers(1, 12))
        expected = sorted(np.flatnonzero(row > 0).tolist(), key=lambda i: (-np.float32(row[i]), keys[i]))[:k]
        assert _top_of_row(row, k, keys)[0].tolist() == expected
