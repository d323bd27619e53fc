"""Training: the trainer's phases (rollout, skill pass, teacher pass, update), Stage 1, checkpoints."""
