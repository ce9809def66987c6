"""The node tree, its sockets, and the compiler that turns a tree into plain data (``addon.specs``)."""
