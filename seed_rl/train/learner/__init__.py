"""The learner machinery: the trainable policy and every pass over it (``learner.py``), which rows
share a micro-batch (``packing.py``) and what a pass needs in memory (``memory.py``), the
data-parallel processes (``distributed.py``), and the learner's state on disk (``checkpoint.py``)."""
