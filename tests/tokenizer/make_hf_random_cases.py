#!/usr/bin/env python3
"""Writes tests/tokenizer/hf_random_cases.json: seeded random strings that stress the Qwen
tokenizer (regex classes, every kind of whitespace, contractions in any case, combining marks
and Hangul jamo that NFC composes, scripts with their own digits, emoji sequences, added tokens
next to all of these) with the ids and decode that Hugging Face `tokenizers` gives for them
(add_special_tokens=False). Run where `tokenizers` is installed (the GPU machine):
  python3 tests/tokenizer/make_hf_random_cases.py models/qwen3-pycode-22m/tokenizer.json OUT.json
For the other families' tokenizers (../shared/fixtures/tokenizers/NAME/tokenizer.json), --family
adds pieces that stress SentencePiece-style files ("▁", byte-fallback token names, their special
tokens) and random id lists with their decode (byte-fallback runs, Strip, Metaspace):
  python3 tests/tokenizer/make_hf_random_cases.py --family ../shared/fixtures/tokenizers/gemma3/tokenizer.json \
      tests/tokenizer/hf_random_cases_gemma3.json
tokenizer_tests checks every tests/tokenizer/hf_random_cases_*.json it finds.
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


FAMILY_PIECES = ["\u2581", "\u2581\u2581", " \u2581", "<0x0A>", "<0xE4>", "<unk>", "<s>", "</s>", "<bos>", "<eos>",
                 "<start_of_turn>", "<end_of_turn>", "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>",
                 "[INST]", " [/INST]", "\t\t", "\n\n\n", "    ", "  ", ">\u2581</", "\U000E0001", "\U0010FFFD",
                 "1234567", "'s", " 'LL"]


def random_text(rng, pieces=PIECES):
    parts = []
    for _ in range(rng.randrange(0, 24)):
        parts.append(rng.choice(pieces) if rng.random() < 0.3 else random_char(rng))
    return "".join(parts)


def main():
    args = sys.argv[1:]
    family = args and args[0] == "--family"
    if family:
        args = args[1:]
    tok = Tokenizer.from_file(args[0])
    rng = random.Random(20261129)
    pieces = PIECES + FAMILY_PIECES if family else PIECES
    cases = []
    for _ in range(1500):
        text = random_text(rng, pieces)
        ids = tok.encode(text, add_special_tokens=False).ids
        cases.append({"text": text, "ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)})
    out = {"source": f"Hugging Face tokenizers {tokenizers.__version__}, "
                     f"tests/tokenizer/make_hf_random_cases.py{' --family' if family else ''} (seed 20261129)",
           "cases": cases}
    if family:
        out["tokenizer"] = args[0]
        # Random ids, biased to the low ids where SentencePiece files keep byte-fallback tokens.
        n = tok.get_vocab_size(with_added_tokens=True)
        decodes = []
        for _ in range(500):
            ids = [rng.randrange(0, 300) if rng.random() < 0.5 else rng.randrange(0, n) for _ in range(rng.randrange(0, 12))]
            decodes.append({"ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)})
        out["decode_cases"] = decodes
    with open(args[1], "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True, indent=0)


if __name__ == "__main__":
    main()
