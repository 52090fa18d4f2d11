"""A compact torch trainer for encoder, seq2seq and decoder pretraining from token shards."""
