"""Search-augmented QA with Search-R1's protocol (``seed/SearchQA-v0``).

Names load on first use, and retriever back ends import their dependencies when built,
so ``import seed_envs.searchqa`` is light.
"""

from seed_envs.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "INVALID_ACTION_MESSAGE": "seed_envs.searchqa.protocol",
        "Doc": "seed_envs.searchqa.retrievers",
        "Retriever": "seed_envs.searchqa.retrievers",
        "SearchQAEnv": "seed_envs.searchqa.env",
        "exact_match": "seed_envs.searchqa.scoring",
        "extract_answer": "seed_envs.searchqa.scoring",
        "information_block": "seed_envs.searchqa.protocol",
        "make_retriever": "seed_envs.searchqa.retrievers",
        "normalize_answer": "seed_envs.searchqa.scoring",
        "parse_turn": "seed_envs.searchqa.protocol",
        "prefetch_searches": "seed_envs.searchqa.env",
        "resolve_source": "seed_envs.searchqa.sources",
        "score_answer": "seed_envs.searchqa.scoring",
        "shared_retriever": "seed_envs.searchqa.retrievers",
        "step_batch": "seed_envs.searchqa.env",
        "sub_exact_match": "seed_envs.searchqa.scoring",
        "token_f1": "seed_envs.searchqa.scoring",
    },
)
