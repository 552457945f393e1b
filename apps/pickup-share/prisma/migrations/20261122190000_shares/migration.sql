-- Shares, their files, issued upload permissions, authorization codes and the admin audit log.

CREATE TABLE "share" (
    "id" TEXT NOT NULL,
    "code" TEXT NOT NULL,
    "max_downloads" INTEGER,
    "remaining" INTEGER,
    "limit_size" BOOLEAN NOT NULL DEFAULT false,
    "auth_code_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "exhausted_at" TIMESTAMPTZ(3),

    CONSTRAINT "share_pkey" PRIMARY KEY ("id")
);
-- A pickup code is unique among live shares; finished shares are deleted, which frees the code.
CREATE UNIQUE INDEX "share_code_key" ON "share"("code");
CREATE INDEX "share_expires_at_idx" ON "share"("expires_at");

CREATE TABLE "share_file" (
    "id" TEXT NOT NULL,
    "share_id" TEXT NOT NULL,
    "position" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "size" BIGINT NOT NULL,
    "type" TEXT NOT NULL,
    "pathname" TEXT NOT NULL,
    "store" TEXT NOT NULL,
    "store_instance" TEXT NOT NULL,

    CONSTRAINT "share_file_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "share_file_share_id_fkey" FOREIGN KEY ("share_id") REFERENCES "share"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE UNIQUE INDEX "share_file_store_instance_pathname_key" ON "share_file"("store_instance", "pathname");
CREATE INDEX "share_file_share_id_idx" ON "share_file"("share_id");

CREATE TABLE "issued_upload" (
    "id" TEXT NOT NULL,
    "store" TEXT NOT NULL,
    "store_instance" TEXT NOT NULL,
    "pathname" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "size" BIGINT NOT NULL,
    "type" TEXT NOT NULL,
    "max_bytes" BIGINT,
    "auth_code_id" TEXT,
    "client_ip" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "share_id" TEXT,

    CONSTRAINT "issued_upload_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "issued_upload_store_instance_pathname_key" ON "issued_upload"("store_instance", "pathname");
CREATE INDEX "issued_upload_created_at_idx" ON "issued_upload"("created_at");

CREATE TABLE "auth_code" (
    "id" TEXT NOT NULL,
    "code_hash" TEXT NOT NULL,
    "hint" TEXT NOT NULL,
    "note" TEXT,
    "scope" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "used_at" TIMESTAMPTZ(3),
    "used_by_share_id" TEXT,
    "used_by_share_code" TEXT,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "auth_code_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "auth_code_code_hash_key" ON "auth_code"("code_hash");

CREATE TABLE "audit_log" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "target" TEXT,
    "ip" TEXT,
    "details" JSONB NOT NULL DEFAULT '{}',

    CONSTRAINT "audit_log_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "audit_log_at_idx" ON "audit_log"("at");
