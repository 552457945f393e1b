-- API credentials: a public key with the service prefix, and the SHA-256 of a 64-hex secret.
CREATE TABLE "api_credential" (
    "id" UUID NOT NULL,
    "account_id" UUID NOT NULL,
    "public_key" TEXT NOT NULL,
    "secret_hash" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_credential_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "api_credential_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "account"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE UNIQUE INDEX "api_credential_public_key_key" ON "api_credential"("public_key");
CREATE INDEX "api_credential_account_id_idx" ON "api_credential"("account_id");

-- Root zones the operator offers; term_years 0 means subdomains under it never expire.
CREATE TABLE "root_zone" (
    "id" SERIAL NOT NULL,
    "name" TEXT NOT NULL,
    "price_cents" INTEGER NOT NULL DEFAULT 0,
    "term_years" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "root_zone_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "root_zone_price_not_negative" CHECK ("price_cents" >= 0),
    CONSTRAINT "root_zone_term_range" CHECK ("term_years" >= 0 AND "term_years" <= 10)
);
CREATE UNIQUE INDEX "root_zone_name_key" ON "root_zone"("name");

-- Subdomains. A released subdomain is deleted (the audit log keeps its history), so every row counts against the quota.
CREATE TABLE "subdomain" (
    "id" SERIAL NOT NULL,
    "account_id" UUID NOT NULL,
    "root_zone_id" INTEGER NOT NULL,
    "label" TEXT NOT NULL,
    "full_domain" TEXT NOT NULL,
    "suspended" BOOLEAN NOT NULL DEFAULT false,
    "never_expires" BOOLEAN NOT NULL DEFAULT false,
    "expires_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "subdomain_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "subdomain_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "account"("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "subdomain_root_zone_id_fkey" FOREIGN KEY ("root_zone_id") REFERENCES "root_zone"("id") ON DELETE RESTRICT ON UPDATE CASCADE
);
CREATE UNIQUE INDEX "subdomain_full_domain_key" ON "subdomain"("full_domain");
CREATE INDEX "subdomain_account_id_id_idx" ON "subdomain"("account_id", "id");
CREATE INDEX "subdomain_expires_at_idx" ON "subdomain"("expires_at");

-- DNS records. state: active | pending_create | pending_update | pending_delete; `previous` keeps
-- the confirmed values of a pending update so a failed or crashed write can be rolled back.
CREATE TABLE "dns_record" (
    "id" SERIAL NOT NULL,
    "subdomain_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "ttl" INTEGER NOT NULL DEFAULT 600,
    "priority" INTEGER,
    "weight" INTEGER,
    "port" INTEGER,
    "flag" INTEGER,
    "tag" TEXT,
    "state" TEXT NOT NULL DEFAULT 'active',
    "previous" JSONB,
    "pending_since" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "dns_record_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "dns_record_subdomain_id_fkey" FOREIGN KEY ("subdomain_id") REFERENCES "subdomain"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX "dns_record_subdomain_id_id_idx" ON "dns_record"("subdomain_id", "id");
CREATE INDEX "dns_record_state_pending_since_idx" ON "dns_record"("state", "pending_since");

-- Audit log of every write.
CREATE TABLE "audit_log" (
    "id" BIGSERIAL NOT NULL,
    "account_id" UUID,
    "credential_id" UUID,
    "ip" TEXT,
    "operation" TEXT NOT NULL,
    "target" TEXT,
    "outcome" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "audit_log_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "audit_log_account_id_created_at_idx" ON "audit_log"("account_id", "created_at");
