"""Networks and their training arithmetic, in numpy float32: ``MLP`` (per-layer sizes and activations), ``GraphNetwork``
(NEAT's feed-forward graphs), Adam and SGD, Huber and MSE losses with gradient clipping. Knows nothing of
environments or training loops."""
