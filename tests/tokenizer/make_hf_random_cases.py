#!/usr/bin/env python3
"""Writes tests/tokenizer/hf_random_cases.json: seeded random strings that stress the Qwen
tokenizer (regex classes, every kind of whitespace, contractions in any case, combining marks
and Hangul jamo that NFC composes, scripts with their own digits, emoji sequences, added tokens
next to all of these) with the ids and decode that Hugging Face `tokenizers` gives for them
(add_special_tokens=False). Run where `tokenizers` is installed (the GPU machine):
  python3 tests/tokenizer/make_hf_random_cases.py models/qwen3-pycode-22m/tokenizer.json OUT.json
"""
import json
import random
import sys

import tokenizers
from tokenizers import Tokenizer

SPACES = [" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x85", "\xa0", "\u1680", "\u2000", "\u2009",
          "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\u180e", "\u200b", "\ufeff"]
PIECES = ["'s", "'S", "'t", "'T", "'re", "'RE", "'Re", "'ve", "'m", "'M", "'ll", "'LL", "'d", "'D",
          "\u017fs", "'\u017f", "'K", "'\u212a", "<|im_start|>", "<|im_end|>", "<|endoftext|>",
          "<think>", "</think>", "<tool_call>", "<|fim_prefix|>", "<|im_end|", "<|", "|>",
          "\u0338", "\u0301", "e\u0301", "\u1100\u1161", "\u1100\u1161\u11a8", "\uac00\u11a8",
          "\u304b\u3099", "\u212b", "\u2126", "\ufb01", "\u0958", "\U0001d400", "\u0660\u0661",
          "\u0966\u0967", "\uff11\uff12", "\u00b2\u00b3", "\u2167", "\U0001F468\u200d\U0001F469",
          "\U0001F44D\U0001F3FD", "\U0001F1EB\U0001F1F7", "\u2764\ufe0f", "def ", "    return",
          "1,000.5", "x_1", "__init__", "http://a.b/c?d=e", "\r\n", "\n\n", "  \n", " \t "]


def random_char(rng):
    r = rng.randrange(12)
    if r < 3:
        return chr(rng.randrange(0x20, 0x7F))
    if r == 3:
        return rng.choice(SPACES)
    if r == 4:
        return chr(rng.randrange(0xC0, 0x250))
    if r == 5:
        return chr(rng.randrange(0x300, 0x370))
    if r == 6:
        return chr(rng.randrange(0x1100, 0x1200))
    if r == 7:
        return chr(rng.randrange(0x3040, 0x3100))
    if r == 8:
        return chr(rng.randrange(0x4E00, 0xA000))
    if r == 9:
        return chr(rng.randrange(0x1F300, 0x1FB00))
    if r == 10:
        return chr(rng.randrange(0x370, 0x1100))  # Greek, Cyrillic, Arabic, Indic, Thai, ...
    while True:
        c = rng.randrange(0, 0x110000)
        if not 0xD800 <= c <= 0xDFFF:
            return chr(c)


def random_text(rng):
    parts = []
    for _ in range(rng.randrange(0, 24)):
        parts.append(rng.choice(PIECES) if rng.random() < 0.3 else random_char(rng))
    return "".join(parts)


def main():
    tok = Tokenizer.from_file(sys.argv[1])
    rng = random.Random(20261129)
    cases = []
    for _ in range(1500):
        text = random_text(rng)
        ids = tok.encode(text, add_special_tokens=False).ids
        cases.append({"text": text, "ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)})
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump({"source": f"Hugging Face tokenizers {tokenizers.__version__}, "
                             "tests/tokenizer/make_hf_random_cases.py (seed 20261129)",
                   "cases": cases}, f, ensure_ascii=True, indent=0)


if __name__ == "__main__":
    main()
