"""The transformers generation engine: batch layout, shared prefixes, frozen states, sampling and
the decode loop (:mod:`.generation`); its speed-ups are switched there."""
