"""Tokenizer training on a build's clean shards, and token shards for the trainer."""
