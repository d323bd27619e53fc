"""The model of the procedural knowledge world: entities, their passages, and the question sampler.

See :mod:`seed_envs.searchqa.generate` for what the world holds and how splits are kept apart.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field

import numpy as np

from seed_envs.core import SPLITS, stable_bucket, stable_seed
from seed_envs.searchqa import world_text as wt

GENERATOR_VERSION = 2

#: Entity-valued relations: name -> (subject kind, object kind).
RELATIONS = {
    "birthplace": ("person", "city"),
    "employer": ("person", "org"),
    "mentor": ("person", "person"),
    "founder": ("org", "person"),
    "headquarters": ("org", "city"),
    "country": ("city", "country"),
    "capital": ("country", "city"),
    "creator": ("work", "person"),
}
#: Value-valued attributes: name -> subject kind.
ATTRIBUTES = {
    "birth_year": "person",
    "occupation": "person",
    "founded_year": "org",
    "population": "city",
    "city_founded": "city",
    "currency": "country",
    "language": "country",
    "release_year": "work",
}
#: Words an expert adds to an entity's name to find the passage stating a fact.
SEARCH_HINTS = {
    "birthplace": "born",
    "birth_year": "born",
    "occupation": "profession",
    "employer": "worked for",
    "mentor": "mentor",
    "founder": "founded by",
    "founded_year": "founded",
    "headquarters": "headquartered",
    "country": "country",
    "population": "population",
    "city_founded": "founded",
    "capital": "capital",
    "currency": "currency",
    "language": "language",
    "creator": "by",
    "release_year": "released",
}
COMPARABLE = {"birth_year": ("person", min), "founded_year": ("org", min), "population": ("city", max)}


@dataclass(frozen=True)
class WorldConfig:
    """Size and difficulty of a generated world."""

    name: str = "world"
    n_passages: int = 20_000
    seed: int = 0
    max_hops: int = 3
    comparison: bool = True
    distractors: bool = True
    train_questions: int = 20_000
    valid_questions: int = 500
    unseen_region_fraction: float = 0.2
    heldout_composition_fraction: float = 0.3

    def key(self) -> str:
        """A short id of this config (and the generator version), for cache paths."""
        return f"{self.name}-{stable_seed(GENERATOR_VERSION, *asdict(self).items()) % 16**10:010x}"


@dataclass
class Entity:
    kind: str
    name: str
    region: int
    attrs: dict[str, object] = field(default_factory=dict)
    rels: dict[str, int] = field(default_factory=dict)
    passages: list[int] = field(default_factory=list)

    def phrase(self) -> str:
        """How a question names this entity."""
        if self.kind == "org":
            return f"the {self.name}"
        if self.kind == "work":
            return f"the {self.attrs['work_kind']} {self.name}"
        return self.name

    def value(self, attribute: str) -> str:
        value = self.attrs[attribute]
        return f"{value:,}" if attribute == "population" else str(value)


class World:
    """Entities, passages and the question sampler of one generated world."""

    def __init__(self, config: WorldConfig) -> None:
        self.config = config
        self.rng = np.random.default_rng(stable_seed("searchqa-world", config.seed))
        self.entities: list[Entity] = []
        self.by_kind: dict[tuple[str, int], list[int]] = {}
        self.passages: list[str] = []
        self._names: set[str] = set()
        self._pools: dict[tuple[str, frozenset[int]], list[int]] = {}
        self._build_entities()
        self._write_passages()
        n_regions = len(self.by_kind_all("country"))
        n_unseen = max(1, round(config.unseen_region_fraction * n_regions))
        self.unseen_regions = {int(r) for r in self.rng.choice(n_regions, size=n_unseen, replace=False)}

    # ------------------------------------------------------------ entities
    def by_kind_all(self, kind: str) -> list[int]:
        return [i for (k, _), ids in self.by_kind.items() if k == kind for i in ids]

    def _choice(self, seq: list[int]) -> int:
        """One element of a list, drawn in O(1) (``rng.choice`` copies the list)."""
        return int(seq[int(self.rng.integers(len(seq)))])

    def _pool(self, kind: str, region_set: frozenset[int]) -> list[int]:
        """The entities of a kind in a set of regions (cached)."""
        key = (kind, region_set)
        if key not in self._pools:
            self._pools[key] = [i for r in sorted(region_set) for i in self.by_kind.get((kind, r), [])]
        return self._pools[key]

    def _unique(self, make) -> str:
        for _ in range(1000):
            name = make()
            if name not in self._names:
                self._names.add(name)
                return name
        raise RuntimeError("name space exhausted; the world is too large for the syllable pools")

    def _add(self, kind: str, name: str, region: int, **attrs: object) -> int:
        index = len(self.entities)
        self.entities.append(Entity(kind, name, region, attrs=dict(attrs)))
        self.by_kind.setdefault((kind, region), []).append(index)
        return index

    def _build_entities(self) -> None:
        rng, n = self.rng, self.config.n_passages
        n_countries = max(5, round(0.006 * n))
        counts = {
            "city": max(3 * n_countries, round(0.12 * n)),
            "org": round(0.13 * n),
            "person": round(0.45 * n),
            "work": round(0.15 * n),
        }
        for region in range(n_countries):
            name = self._unique(lambda: wt.syllable_word(rng, 2, 3) + wt.pick(rng, wt.COUNTRY_SUFFIXES))
            currency = self._unique(lambda: f"{wt.syllable_word(rng, 2, 2)} {wt.pick(rng, wt.CURRENCY_UNITS)}")
            language = self._unique(lambda: wt.syllable_word(rng, 1, 2) + wt.pick(rng, wt.LANGUAGE_SUFFIXES))
            self._add("country", name, region, currency=currency, language=language)
        for i in range(counts["city"]):
            region = i % n_countries if i < 3 * n_countries else int(rng.integers(n_countries))
            name = self._unique(lambda: wt.syllable_word(rng, 2, 3) + wt.pick(rng, wt.CITY_SUFFIXES))
            city = self._add(
                "city",
                name,
                region,
                population=int(rng.integers(5_000, 3_000_000)),
                city_founded=int(rng.integers(800, 1850)),
            )
            self.entities[city].rels["country"] = region  # country entities are 0..n_countries-1
        for region in range(n_countries):
            cities = self.by_kind[("city", region)]
            self.entities[region].rels["capital"] = self._choice(cities)
            if len(cities) > 1:
                others = [c for c in cities if c != self.entities[region].rels["capital"]]
                self.entities[region].attrs["largest_city"] = self._choice(others)
        surnames = [wt.syllable_word(rng, 2, 3) for _ in range(max(10, counts["person"] // 3))]
        all_cities = self.by_kind_all("city")
        for _ in range(counts["person"]):
            city = self._choice(all_cities)
            region = self.entities[city].region
            name = self._unique(lambda: f"{wt.syllable_word(rng, 1, 2)} {wt.pick(rng, surnames)}")
            person = self._add(
                "person",
                name,
                region,
                birth_year=int(rng.integers(1700, 1990)),
                occupation=wt.pick(rng, wt.OCCUPATIONS),
                he=wt.pick(rng, ("he", "she")),
            )
            self.entities[person].rels["birthplace"] = city
        for _ in range(counts["org"]):
            city = self._choice(all_cities)
            region = self.entities[city].region
            suffix, org_kind = wt.pick(rng, wt.ORG_KINDS)
            name = self._unique(lambda s=suffix: f"{wt.syllable_word(rng, 2, 3)} {s}")
            people = self.by_kind.get(("person", region)) or self.by_kind_all("person")
            founder = self._choice(people)
            year = self.entities[founder].attrs["birth_year"] + int(rng.integers(20, 60))
            org = self._add("org", name, region, founded_year=year, org_kind=org_kind)
            self.entities[org].rels.update(headquarters=city, founder=founder)
        for region in range(n_countries):
            people = self.by_kind.get(("person", region), [])
            orgs = self.by_kind.get(("org", region), [])
            for person in people:
                if orgs and rng.random() < 0.7:
                    self.entities[person].rels["employer"] = self._choice(orgs)
                if len(people) > 1 and rng.random() < 0.35:
                    mentor = self._choice(people)
                    if mentor != person:
                        self.entities[person].rels["mentor"] = mentor
        all_people = self.by_kind_all("person")
        for _ in range(counts["work"]):
            creator = self._choice(all_people)
            work_kind, verb, participle = wt.pick(rng, wt.WORK_KINDS)
            words = [wt.pick(rng, wt.WORK_WORDS) for _ in range(int(rng.integers(2, 4)))]
            name = self._unique(lambda w=words: " ".join(w) + " " + wt.syllable_word(rng, 1, 2))
            year = self.entities[creator].attrs["birth_year"] + int(rng.integers(18, 70))
            work = self._add(
                "work",
                name,
                self.entities[creator].region,
                release_year=year,
                work_kind=work_kind,
                verb=verb,
                participle=participle,
            )
            self.entities[work].rels["creator"] = creator

    # ------------------------------------------------------------ passages
    def _facts(self, entity: Entity) -> list[tuple[str, str]]:
        """(fact name, object text) pairs that the entity's passage states."""
        facts = [(rel, self.entities[obj].name) for rel, obj in entity.rels.items()]
        facts += [(attr, entity.value(attr)) for attr in ATTRIBUTES if attr in entity.attrs]
        if entity.kind == "org":
            facts[0:0] = [("org_kind", entity.attrs["org_kind"])]
        return facts

    def _sentence(self, entity: Entity, fact: str, obj: str) -> str:
        if fact == "org_kind":
            return f"The {entity.name} is a {obj}."
        subject = entity.name
        fields = {
            "s": subject,
            "o": obj,
            "p": entity.attrs.get("he", "it"),
            "q": {"he": "his", "she": "her"}.get(str(entity.attrs.get("he")), "its"),
            "k": entity.attrs.get("work_kind", ""),
            "v": entity.attrs.get("verb", ""),
            "pp": entity.attrs.get("participle", ""),
        }
        return wt.pick(self.rng, wt.FACT_TEMPLATES[fact]).format(**fields)

    def _distractor(self, entity: Entity) -> str | None:
        rng = self.rng
        region_cities = self.by_kind[("city", entity.region)]
        if entity.kind == "person":
            if rng.random() < 0.5:
                city = self.entities[self._choice(region_cities)].name
                return wt.pick(rng, wt.DISTRACTOR_TEMPLATES["person_city"]).format(
                    s=entity.name, o=city, y=entity.attrs["birth_year"] + int(rng.integers(15, 50))
                )
            year = entity.attrs["birth_year"] + int(rng.integers(20, 60))
            return wt.pick(rng, wt.DISTRACTOR_TEMPLATES["person_year"]).format(s=entity.name, o=year)
        if entity.kind == "org":
            city = self.entities[self._choice(region_cities)].name
            return wt.pick(rng, wt.DISTRACTOR_TEMPLATES["org_city"]).format(
                s=entity.name, o=city, y=entity.attrs["founded_year"] + int(rng.integers(5, 80))
            )
        if entity.kind == "country" and "largest_city" in entity.attrs:
            city = self.entities[int(entity.attrs["largest_city"])].name
            return wt.pick(rng, wt.DISTRACTOR_TEMPLATES["country_city"]).format(s=entity.name, o=city)
        return None

    def _passage(self, entity: Entity, sentences: list[str]) -> None:
        entity.passages.append(len(self.passages))
        self.passages.append(f'"{entity.name}"\n' + " ".join(sentences))

    def _write_passages(self) -> None:
        rng = self.rng
        for entity in self.entities:
            sentences = [self._sentence(entity, fact, obj) for fact, obj in self._facts(entity)]
            order = rng.permutation(len(sentences) - 1) + 1
            sentences = [sentences[0]] + [sentences[i] for i in order]
            if self.config.distractors and (extra := self._distractor(entity)):
                sentences.insert(int(rng.integers(1, len(sentences) + 1)), extra)
            self._passage(entity, sentences)
        # Section passages: the same title again, restating one fact (and a distractor).
        candidates = [i for i, e in enumerate(self.entities) if e.kind in ("person", "org", "country")]
        while len(self.passages) < self.config.n_passages:
            entity = self.entities[self._choice(candidates)]
            fact, obj = wt.pick(rng, self._facts(entity))
            sentences = [self._sentence(entity, fact, obj)]
            if self.config.distractors and (extra := self._distractor(entity)):
                sentences.append(extra)
            self._passage(entity, sentences)

    # ------------------------------------------------------------ questions
    def compositions(self) -> list[tuple[str, ...]]:
        """Type-consistent relation chains of 2..max_hops steps (last step may be an attribute)."""
        chains = []
        for length in range(2, self.config.max_hops + 1):
            for chain in itertools.product([*RELATIONS, *ATTRIBUTES], repeat=length):
                if all(step in RELATIONS for step in chain[:-1]) and self._chain_kind(chain):
                    chains.append(chain)
        return chains

    @staticmethod
    def _chain_kind(chain: tuple[str, ...]) -> str | None:
        """The subject kind a chain applies to, or None if its types do not line up."""
        kind = RELATIONS[chain[0]][0] if chain[0] in RELATIONS else ATTRIBUTES[chain[0]]
        current = kind
        for step in chain:
            if step in RELATIONS:
                if RELATIONS[step][0] != current:
                    return None
                current = RELATIONS[step][1]
            elif ATTRIBUTES[step] != current:
                return None
        return kind

    def heldout_compositions(self) -> set[tuple[str, ...]]:
        chains = self.compositions()
        frac = self.config.heldout_composition_fraction
        held = {c for c in chains if stable_bucket(("composition", *c), 1000) < 1000 * frac}
        return held

    def _resolve(self, subject: int, chain: tuple[str, ...]) -> tuple[list[int], str] | None:
        path, current = [subject], subject
        for step in chain:
            entity = self.entities[current]
            if step in RELATIONS:
                if step not in entity.rels:
                    return None
                current = entity.rels[step]
                if current in path:
                    return None
                path.append(current)
            else:
                return path, entity.value(step)
        return path, self.entities[current].name

    def _bridge(self, subject: int, chain: tuple[str, ...]) -> dict | None:
        resolved = self._resolve(subject, chain)
        if resolved is None:
            return None
        path, answer = resolved
        phrase = self.entities[subject].phrase()
        for step in chain[:-1]:
            phrase = wt.pick(self.rng, wt.RELATION_PHRASES[step]).format(x=phrase)
        question = wt.pick(self.rng, wt.FINAL_QUESTIONS[chain[-1]]).format(x=phrase)
        queries = [
            f"{self.entities[e].name} {SEARCH_HINTS[step]}" for e, step in zip(path[: len(chain)], chain, strict=True)
        ]
        return {
            "key": (">".join(chain), subject),
            "question": question[0].upper() + question[1:],
            "golden_answers": [answer],
            "metadata": {
                "type": "single" if len(chain) == 1 else "bridge",
                "hops": len(chain),
                "composition": ">".join(chain),
                "entities": [self.entities[e].name for e in path],
                "search_queries": queries,
                "supporting_ids": [str(self.entities[e].passages[0]) for e in path[: len(chain)]],
            },
        }

    def _comparison(self, region_set: frozenset[int]) -> dict | None:
        rng = self.rng
        attribute = wt.pick(rng, sorted(COMPARABLE))
        kind, best = COMPARABLE[attribute]
        pool = self._pool(kind, region_set)
        if len(pool) < 2:
            return None
        a, b = self._choice(pool), self._choice(pool)
        if a == b:
            return None
        values = {a: self.entities[a].attrs[attribute], b: self.entities[b].attrs[attribute]}
        if values[a] == values[b]:
            return None
        winner = best(values, key=values.get)
        template = wt.pick(rng, wt.COMPARISON_QUESTIONS[attribute])
        question = template.format(a=self.entities[a].phrase(), b=self.entities[b].phrase())
        return {
            "key": (f"compare:{attribute}", min(a, b), max(a, b)),
            "question": question,
            "golden_answers": [self.entities[winner].name],
            "metadata": {
                "type": "comparison",
                "hops": 2,
                "composition": f"compare:{attribute}",
                "entities": [self.entities[a].name, self.entities[b].name],
                "search_queries": [f"{self.entities[e].name} {SEARCH_HINTS[attribute]}" for e in (a, b)],
                "supporting_ids": [str(self.entities[e].passages[0]) for e in (a, b)],
            },
        }

    def questions(self) -> dict[str, list[dict]]:
        """Sample every split's questions (deterministic for a config)."""
        config = self.config
        regions = {e.region for e in self.entities}
        seen, unseen = frozenset(regions - self.unseen_regions), frozenset(self.unseen_regions)
        heldout = self.heldout_compositions()
        multi = self.compositions()
        singles = [(step,) for step in [*RELATIONS, *ATTRIBUTES]]
        plans = {
            "train": (seen, singles, [c for c in multi if c not in heldout]),
            "valid_unseen": (unseen, singles, multi),
        }
        wanted = {
            "train": config.train_questions,
            "valid_seen": config.valid_questions,
            "valid_unseen": config.valid_questions,
        }
        out: dict[str, list[dict]] = {split: [] for split in SPLITS}
        facts: set[tuple] = set()
        for source, (region_set, single_chains, multi_chains) in plans.items():
            targets = ("train", "valid_seen") if source == "train" else ("valid_unseen",)
            attempts = 0
            while any(len(out[t]) < wanted[t] for t in targets) and attempts < 20 * sum(wanted.values()):
                attempts += 1
                record = self._sample(region_set, single_chains, multi_chains)
                if record is None or (key := record.pop("key")) in facts:
                    continue
                split = (
                    "valid_unseen"
                    if source == "valid_unseen"
                    else ("valid_seen" if stable_bucket(("fact", *key), 100) < 10 else "train")
                )
                if len(out[split]) >= wanted[split]:
                    continue
                facts.add(key)
                record["id"] = f"{config.name}_{split}_{len(out[split])}"
                out[split].append(record)
        return out

    def _sample(self, region_set: frozenset[int], singles: list, multis: list) -> dict | None:
        rng = self.rng
        roll = rng.random()
        if self.config.comparison and roll < 0.15:
            return self._comparison(region_set)
        chains = multis if (multis and roll >= 0.55) else singles
        chain = chains[int(rng.integers(len(chains)))]
        kind = self._chain_kind(chain)
        pool = self._pool(kind, region_set)
        if not pool:
            return None
        return self._bridge(self._choice(pool), chain)
