"""Data: the generated image-caption world, its evaluation tasks and tokenizer."""
