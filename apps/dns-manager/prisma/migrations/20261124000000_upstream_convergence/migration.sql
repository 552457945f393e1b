-- The database is the desired state of every RRset; the upstream is made to match it (README,
-- "How dns-manager keeps DNS in line with its database").

-- state: active | releasing. A subdomain being deleted or released keeps its row (and so its
-- label) until the upstream has confirmed that nothing is served at or under its name.
-- dns_version counts the changes of the subdomain's desired DNS state: a push that read an older
-- version than the one current after it landed pushes again, so two writes can never leave the
-- older one's RRsets upstream.
ALTER TABLE "subdomain" ADD COLUMN "state" TEXT NOT NULL DEFAULT 'active';
ALTER TABLE "subdomain" ADD COLUMN "state_since" TIMESTAMPTZ(3);
ALTER TABLE "subdomain" ADD COLUMN "dns_version" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "subdomain" ADD CONSTRAINT "subdomain_state_known" CHECK ("state" IN ('active', 'releasing'));
CREATE INDEX "subdomain_state_state_since_idx" ON "subdomain"("state", "state_since");

-- RRsets whose upstream state is unknown (a call timed out or failed half-way): the repair job
-- re-asserts the database's state of each and reads it back until the upstream agrees.
CREATE TABLE "upstream_repair" (
    "id" SERIAL NOT NULL,
    "root_zone_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "since" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_error" TEXT,

    CONSTRAINT "upstream_repair_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "upstream_repair_root_zone_id_fkey" FOREIGN KEY ("root_zone_id") REFERENCES "root_zone"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE UNIQUE INDEX "upstream_repair_root_zone_id_name_type_key" ON "upstream_repair"("root_zone_id", "name", "type");
CREATE INDEX "upstream_repair_next_at_idx" ON "upstream_repair"("next_at");

-- Leases of jobs that must run on one replica at a time (the anti-entropy reconciler).
CREATE TABLE "job_lease" (
    "name" TEXT NOT NULL,
    "holder" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "job_lease_pkey" PRIMARY KEY ("name")
);
