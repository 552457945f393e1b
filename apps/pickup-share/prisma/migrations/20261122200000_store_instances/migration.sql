-- Storage instances with quotas (issue 7) and the index of files held by git repository stores.

CREATE TABLE "store_instance" (
    "id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "settings" JSONB NOT NULL DEFAULT '{}',
    "quota_bytes" BIGINT,
    "used_bytes" BIGINT NOT NULL DEFAULT 0,
    "reserved_bytes" BIGINT NOT NULL DEFAULT 0,
    -- quota - used - reserved, kept by every update; null = no quota. A reservation is one
    -- conditional UPDATE "free_bytes >= size", so concurrent permissions never overshoot.
    "free_bytes" BIGINT,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "builtin" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "store_instance_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "store_instance_name_key" ON "store_instance"("name");
CREATE INDEX "store_instance_kind_idx" ON "store_instance"("kind");

CREATE TABLE "repo_object" (
    "store_instance" TEXT NOT NULL,
    "pathname" TEXT NOT NULL,
    "commit_sha" TEXT NOT NULL,
    "blob_sha" TEXT NOT NULL,
    "size" BIGINT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "repo_object_pkey" PRIMARY KEY ("store_instance", "pathname")
);
