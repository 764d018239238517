"""Tiny, fully local models for tests and demos: a random Llama with a byte-level BPE tokenizer
trained on the built-in corpora. No download, a few MB, loads in well under a second."""

from __future__ import annotations

from pathlib import Path


def _train_tokenizer(vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from specterm.engines.corpora import load_builtin

    texts = [p.text for p in load_builtin()]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<s>", "</s>", "<pad>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")


def make_tiny_model_dir(path: str | Path, vocab_size: int = 320, layers: int = 4, hidden: int = 64,
                        seed: int = 0, init_range: float = 0.3) -> Path:
    """Write a random LlamaForCausalLM (safetensors) and its tokenizer to `path`; return the path.

    `init_range` is large so that logits are well separated: a random model with the usual 0.02
    has near-ties that batch/incremental float noise could flip.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tok = _train_tokenizer(vocab_size)
    tok.save_pretrained(path)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden,
                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=1024, initializer_range=init_range,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                      tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg)
    model.save_pretrained(path, safe_serialization=True)
    return path
