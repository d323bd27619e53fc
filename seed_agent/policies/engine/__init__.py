"""The transformers generation engine: sampling and the decode loop, the passes both sampling and
scoring run (:mod:`.generation`), what a batch shares (:mod:`.layout`, the one place that decides
it), and the speed-ups (:mod:`.prefix_store`, :mod:`.frozen_states`), each switched on the engine."""
