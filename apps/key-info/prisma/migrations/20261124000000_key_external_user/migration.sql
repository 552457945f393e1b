-- OpenRouter's `external.user` create parameter: the partner's end-user identifier a key is
-- attributed to, returned as `external_user` on every key object (null when none was given).

-- AlterTable
ALTER TABLE "api_key" ADD COLUMN "external_user" TEXT,
    ADD CONSTRAINT "api_key_external_user_check" CHECK (char_length("external_user") BETWEEN 1 AND 200);
