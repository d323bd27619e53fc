"""Stage 1 and the warm start: SFT of the analyzer role on trajectory -> skill pairs (``sft.py``),
and of the acting role on the env's expert demonstrations before RL (``warm_start.py``, the expert
as an agent in ``expert.py``), both through one SFT loop (``supervised.py``)."""
