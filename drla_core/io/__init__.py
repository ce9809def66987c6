"""Files and pictures: the versioned JSON model format (``model_io``; a team of agents in one file), PNG encoding, and
the pictures drawn with numpy alone (``draw``: font and lines; ``charts``: panels of curves; ``plot``: a training
run's report). Knows how to store a network, not how it was trained."""
