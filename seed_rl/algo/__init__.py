"""The paper's math, as pure functions: group advantages and the GRPO, KL and OPD losses."""
