-- OpenRouter's `external` create parameter: `external.user`, the partner's end-user identifier a
-- key is attributed to (returned as `external_user` on every key object, null when none), and
-- `external.api_key`, the partner's lookup key for it, kept only as its SHA-256 and never
-- returned; one lookup key names one key, so it is unique across all workspaces.

-- AlterTable
ALTER TABLE "api_key" ADD COLUMN "external_user" TEXT,
    ADD COLUMN "external_api_key_hash" TEXT,
    ADD CONSTRAINT "api_key_external_user_check" CHECK (char_length("external_user") BETWEEN 1 AND 200),
    ADD CONSTRAINT "api_key_external_api_key_hash_check" CHECK ("external_api_key_hash" ~ '^[0-9a-f]{64}$');

-- CreateIndex
CREATE UNIQUE INDEX "api_key_external_api_key_hash_key" ON "api_key"("external_api_key_hash");
