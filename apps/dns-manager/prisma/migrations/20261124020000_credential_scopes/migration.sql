-- Credential scopes: `full` (the account's API keys) or `dyndns` (updates the addresses of one
-- subdomain through /nic/update, nothing else). Another scope (acme: TXT under _acme-challenge,
-- issue 14) is one more value here.
ALTER TABLE "api_credential" ADD COLUMN "scope" TEXT NOT NULL DEFAULT 'full';
ALTER TABLE "api_credential" ADD COLUMN "subdomain_id" INTEGER;
ALTER TABLE "api_credential" ADD CONSTRAINT "api_credential_subdomain_id_fkey" FOREIGN KEY ("subdomain_id") REFERENCES "subdomain"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "api_credential" ADD CONSTRAINT "api_credential_scope_known" CHECK (
    ("scope" = 'full' AND "subdomain_id" IS NULL) OR ("scope" = 'dyndns' AND "subdomain_id" IS NOT NULL)
);
CREATE INDEX "api_credential_subdomain_id_idx" ON "api_credential"("subdomain_id");
