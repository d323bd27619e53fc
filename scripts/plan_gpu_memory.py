"""Memory per GPU for the paper's model sizes, on paper: weights, trained state, one micro-batch's
activations (``seed_rl.train.learner.memory``'s estimate, an upper bound measured against CPU passes) and
vLLM's KV cache per token. Nothing is downloaded: the shapes are those the Qwen2.5 model cards
publish, written out below.

    python scripts/plan_gpu_memory.py [--tokens 8192] [--seq 2048] [--gpus 8] [--lora-rank 16]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from seed_rl.tables import markdown_table
from seed_rl.train.learner.memory import MemoryModel, ModelShape, Training

ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")
GB = 1e9


@dataclass(frozen=True)
class Card:
    name: str
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool

    def parameters(self) -> int:
        h, d = self.hidden, self.head_dim
        attention = 2 * h * self.heads * d + 2 * h * self.kv_heads * d + (self.heads + 2 * self.kv_heads) * d
        layer = attention + 3 * h * self.intermediate + 2 * h
        return self.layers * layer + self.vocab * h * (1 if self.tied else 2) + h

    def lora_parameters(self, rank: int) -> int:
        h, d = self.hidden, self.head_dim
        widths = [(h, self.heads * d), (h, self.kv_heads * d), (h, self.kv_heads * d), (self.heads * d, h)]
        return self.layers * sum(rank * (a + b) for a, b in widths)

    def kv_bytes_per_token(self, dtype_bytes: int = 2) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * dtype_bytes

    def shape(self) -> ModelShape:
        return ModelShape(
            self.hidden, self.intermediate, self.layers, self.heads, self.head_dim, self.vocab, dtype_bytes=2
        )


CARDS = (
    Card("Qwen2.5-3B", 2048, 11008, 36, 16, 2, 128, 151936, tied=True),
    Card("Qwen2.5-7B", 3584, 18944, 28, 28, 4, 128, 152064, tied=False),
)


def rows(tokens: int, seq: int, gpus: int, rank: int) -> list[list[str]]:
    out = []
    for card in CARDS:
        params = card.parameters()
        weights = 2 * params  # bf16
        kept_share = 0.25  # at most a quarter of a row's tokens are action tokens with logits kept
        lora = MemoryModel(card.shape(), Training.lora(card.shape(), ATTENTION, rank))
        full = MemoryModel(card.shape(), Training.full(card.shape()))
        rows_per_batch = max(1, tokens // seq)
        kept = int(kept_share * seq)
        lora_act = lora.pass_bytes(rows_per_batch, seq, kept, mode="checkpointed")
        full_act = full.pass_bytes(rows_per_batch, seq, kept, mode="checkpointed")
        lora_state = 16 * card.lora_parameters(rank)  # fp32 weight, grad and two Adam moments
        full_state = 14 * params  # bf16 grad + fp32 master weight and two Adam moments
        kv = card.kv_bytes_per_token()
        out.append(
            [
                card.name,
                f"{params / 1e9:.2f} B",
                f"{weights / GB:.1f}",
                f"{(weights + lora_state + lora_act) / GB:.1f}",
                f"{(weights + full_state + full_act) / GB:.1f}",
                f"{((weights + full_state) / gpus + full_act) / GB:.1f}",
                f"{kv / 1e3:.0f} kB",
                f"{(weights + 100_000 * kv) / GB:.1f}",
            ]
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=8192, help="padded tokens per micro-batch")
    parser.add_argument("--seq", type=int, default=2048, help="tokens per row (prompt + action)")
    parser.add_argument("--gpus", type=int, default=8, help="GPUs FSDP shards the full fine-tune over")
    parser.add_argument("--lora-rank", type=int, default=16)
    args = parser.parse_args()
    headers = [
        "model",
        "parameters",
        "bf16 weights GB",
        "LoRA learner GB",
        "full FT, one GPU GB",
        f"full FT, FSDP over {args.gpus} GB",
        "vLLM KV per token",
        "vLLM, 100k KV tokens GB",
    ]
    print(markdown_table(headers, rows(args.tokens, args.seq, args.gpus, args.lora_rank)))
    print(
        f"\nmicro-batch: {args.tokens} padded tokens of rows of {args.seq}, gradient checkpointing; LoRA r="
        f"{args.lora_rank} on q/k/v/o of every layer; activations by seed_rl.train.learner.memory (an upper bound)"
    )


if __name__ == "__main__":
    main()
