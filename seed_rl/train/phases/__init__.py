"""The RL phases of an update, in the paper's order: rewards and advantages (``update_batch.py``),
hindsight skills (``skill_pass.py``), the rows and their teacher pass (``train_rows.py``), the update
(``update.py``), the collapse watch (``collapse.py``); each phase's seconds (``phase_timer.py``); and
prompts that carry skills, for evaluating with them (``skill_prompt.py``)."""
