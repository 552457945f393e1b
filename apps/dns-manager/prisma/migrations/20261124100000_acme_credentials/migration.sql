-- ACME-only credentials (issue 14): scope `acme` may write and delete TXT records under
-- `_acme-challenge` and nothing else, on every subdomain of its account (subdomain_id NULL) or
-- on one (subdomain_id set).
ALTER TABLE "api_credential" DROP CONSTRAINT "api_credential_scope_known";
ALTER TABLE "api_credential" ADD CONSTRAINT "api_credential_scope_known" CHECK (
    ("scope" = 'full' AND "subdomain_id" IS NULL)
    OR ("scope" = 'dyndns' AND "subdomain_id" IS NOT NULL)
    OR "scope" = 'acme'
);
