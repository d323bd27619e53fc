"""Training, in rooms, lowest first (each imports only from its own room and those before it):
``learner/`` (the trainable policy and its passes), ``setup/`` (what a run builds from its config),
``phases/`` (the RL phases of an update), ``stage1/`` (Stage 1 and the warm start). Above them,
``trainer.py`` runs them in the paper's order, and ``saved_policy.py`` loads a finished run's policy."""
