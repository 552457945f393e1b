-- API keys, per-key daily rollups and the usage event ledger.
-- Money is integer micro-USD (1 USD = 1 000 000) in BIGINT columns: sums are exact.

-- CreateTable
CREATE TABLE "api_key" (
    "hash" TEXT NOT NULL,
    "workspace_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "label" TEXT NOT NULL,
    "disabled" BOOLEAN NOT NULL DEFAULT false,
    "limit_micros" BIGINT,
    "limit_reset" TEXT,
    "include_byok_in_limit" BOOLEAN NOT NULL DEFAULT false,
    "is_management_key" BOOLEAN NOT NULL DEFAULT false,
    "is_free_tier" BOOLEAN NOT NULL DEFAULT false,
    "allowed_data_regions" TEXT[] NOT NULL DEFAULT ARRAY['global']::TEXT[],
    "free_model_daily_limit" INTEGER,
    "creator_user_id" TEXT NOT NULL,
    "organization_id" TEXT,
    "usage_micros" BIGINT NOT NULL DEFAULT 0,
    "byok_usage_micros" BIGINT NOT NULL DEFAULT 0,
    "expires_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "api_key_pkey" PRIMARY KEY ("hash"),
    CONSTRAINT "api_key_hash_check" CHECK ("hash" ~ '^[0-9a-f]{64}$'),
    CONSTRAINT "api_key_limit_reset_check" CHECK ("limit_reset" IN ('daily', 'weekly', 'monthly')),
    CONSTRAINT "api_key_limit_check" CHECK ("limit_micros" >= 0),
    CONSTRAINT "api_key_usage_check" CHECK ("usage_micros" >= 0 AND "byok_usage_micros" >= 0),
    CONSTRAINT "api_key_free_model_daily_limit_check" CHECK ("free_model_daily_limit" >= 0)
);

-- CreateTable
CREATE TABLE "api_key_daily_usage" (
    "key_hash" TEXT NOT NULL,
    "day" DATE NOT NULL,
    "usage_micros" BIGINT NOT NULL DEFAULT 0,
    "byok_usage_micros" BIGINT NOT NULL DEFAULT 0,
    "free_model_requests" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "api_key_daily_usage_pkey" PRIMARY KEY ("key_hash", "day")
);

-- CreateTable
CREATE TABLE "usage_event" (
    "workspace_id" UUID NOT NULL,
    "id" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "amount_micros" BIGINT NOT NULL,
    "byok" BOOLEAN NOT NULL,
    "free_model" BOOLEAN NOT NULL,
    "occurred_at" TIMESTAMPTZ(3) NOT NULL,
    "recorded_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "usage_event_pkey" PRIMARY KEY ("workspace_id", "id"),
    CONSTRAINT "usage_event_amount_check" CHECK ("amount_micros" >= 0)
);

-- CreateIndex
CREATE INDEX "api_key_workspace_id_created_at_idx" ON "api_key"("workspace_id", "created_at");

-- CreateIndex
CREATE INDEX "usage_event_key_hash_occurred_at_idx" ON "usage_event"("key_hash", "occurred_at");

-- AddForeignKey
ALTER TABLE "api_key" ADD CONSTRAINT "api_key_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspace"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_key_daily_usage" ADD CONSTRAINT "api_key_daily_usage_key_hash_fkey" FOREIGN KEY ("key_hash") REFERENCES "api_key"("hash") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "usage_event" ADD CONSTRAINT "usage_event_key_hash_fkey" FOREIGN KEY ("key_hash") REFERENCES "api_key"("hash") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "usage_event" ADD CONSTRAINT "usage_event_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspace"("id") ON DELETE CASCADE ON UPDATE CASCADE;
