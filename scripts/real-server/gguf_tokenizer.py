#!/usr/bin/env python3
"""Convert the tokenizer embedded in a GGUF file into a Hugging Face tokenizer.json.

Only the byte-level BPE ("gpt2") vocabularies are handled, which is what SmolLM2 and most
llama.cpp-served models use. Control tokens (<|im_start|> ...) become special added tokens,
so the ids agree with the server's /tokenize. Needs the `gguf` and `tokenizers` packages.

usage: gguf_tokenizer.py MODEL.gguf OUT.json
"""
import sys


def field(reader, key):
    f = reader.fields.get(key)
    if f is None:
        return None
    # A scalar lives in parts[data[0]]; an array of strings in parts[i] for i in data.
    if len(f.data) == 1 and f.types and f.types[0].name != "ARRAY":
        v = f.parts[f.data[0]]
        return v.tobytes().decode("utf-8") if f.types[0].name == "STRING" else v[0].item()
    if f.types and len(f.types) > 1 and f.types[1].name == "STRING":
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
    return [f.parts[i][0].item() for i in f.data]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: gguf_tokenizer.py MODEL.gguf OUT.json")
    from gguf import GGUFReader
    from tokenizers import AddedToken, Tokenizer, decoders, pre_tokenizers
    from tokenizers.models import BPE

    reader = GGUFReader(sys.argv[1])
    kind = field(reader, "tokenizer.ggml.model")
    if kind != "gpt2":
        sys.exit(f"error: tokenizer.ggml.model is {kind!r}; only byte-level BPE ('gpt2') is handled")
    tokens = field(reader, "tokenizer.ggml.tokens")
    merges = field(reader, "tokenizer.ggml.merges") or []
    types = field(reader, "tokenizer.ggml.token_type") or [1] * len(tokens)
    pre = field(reader, "tokenizer.ggml.pre")

    vocab = {t: i for i, t in enumerate(tokens)}
    pairs = [tuple(m.split(" ", 1)) for m in merges]
    tok = Tokenizer(BPE(vocab=vocab, merges=pairs, fuse_unk=False, byte_fallback=False))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre in ("smollm", "starcoder", "refact", "qwen2", "deepseek-llm"):
        # llama.cpp splits digits one by one before the GPT-2 regex for these vocabularies.
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Digits(individual_digits=True), byte_level])
    else:
        tok.pre_tokenizer = byte_level
    tok.decoder = decoders.ByteLevel()
    # token_type 3 = control, 4 = user-defined: matched whole, never split by BPE.
    special = [AddedToken(t, special=True, normalized=False)
               for t, ty in zip(tokens, types) if ty in (3, 4)]
    tok.add_special_tokens(special)
    tok.save(sys.argv[2])
    print(f"wrote {sys.argv[2]}: {len(tokens)} tokens, {len(pairs)} merges, "
          f"{len(special)} special, pre={pre}", file=sys.stderr)


if __name__ == "__main__":
    main()
