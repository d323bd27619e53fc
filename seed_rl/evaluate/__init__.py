"""The evaluation protocol: fixed manifest tasks, playing them with a policy, and the report."""
