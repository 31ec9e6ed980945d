"""Builds scenarios/tokenizers/ladder-tiny.json: a small, deterministic word-level
HF tokenizer (4,096 pseudo-words + [UNK]) used by the simulator scenarios and tests.
No download: the vocabulary is generated from syllables. Run: python3 scripts/make_tiny_tokenizer.py
"""
import itertools
import json
from tokenizers import Tokenizer, models, pre_tokenizers, decoders

ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "ch", "sh"]
VOWELS = ["a", "e", "i", "o", "u", "ai", "ou", "ei"]
words = []
for a, b in itertools.product(ONSETS, VOWELS):
    for c, d in itertools.product(ONSETS, VOWELS):
        words.append(a + b + c + d)
words = sorted(set(words))[:4096]
vocab = {"[UNK]": 0}
for w in words:
    vocab[w] = len(vocab)
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
out = "scenarios/tokenizers/ladder-tiny.json"
tok.save(out, pretty=False)
t = Tokenizer.from_file(out)
enc = t.encode(" ".join(words[:10]))
assert len(enc.ids) == 10, enc.ids
print(out, len(vocab), "tokens;", t.decode(enc.ids))
