-- Limits on upload permissions (issue 19 item 4).
-- The client an upload permission was given to, as limits count it (IPv4 address or IPv6 /64),
-- and when its body began to arrive through this server (blob, repo): a permission that expired
-- with nothing started and nothing stored gives its reservation back.
ALTER TABLE "issued_upload" ADD COLUMN "client_key" TEXT;
ALTER TABLE "issued_upload" ADD COLUMN "upload_started_at" TIMESTAMPTZ(3);
CREATE INDEX "issued_upload_client_key_idx" ON "issued_upload"("client_key");

-- Bytes reserved by unshared upload permissions, per client ("*": everyone together). Every change
-- is one statement; a reservation is the conditional "reserved_bytes + size <= limit", which
-- Postgres re-checks under the row lock, so parallel permissions never overshoot a limit.
CREATE TABLE "upload_allowance" (
    "key" TEXT NOT NULL,
    "reserved_bytes" BIGINT NOT NULL DEFAULT 0,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "upload_allowance_pkey" PRIMARY KEY ("key")
);
