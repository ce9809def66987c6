"""Tools on trained networks: layers that grow and shrink (``growth``), merging networks (``merge``), experts and a
switcher over them (``experts``) with their on-disk library (``expert_library``), and a network as points and lines
for drawing (``netview``)."""
