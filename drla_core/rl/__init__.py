"""Agent kinds: each learns in its own way but trains as one ``TrainingJob`` (``base``)."""
