"""Runs of a compiled tree: the agent kinds, the one assembler (``build``), training, playing,
baking, Learned IK follow, the stored model and every file a run writes. Never imports ``ui``."""
