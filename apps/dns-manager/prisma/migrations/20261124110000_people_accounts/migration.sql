-- The back office (issue 15): people sign in to their account with an e-mail address and a
-- password, and keep a session in a cookie. Kept beside "account" rather than in it, so the API's
-- hot read of a credential and its account is untouched.

-- The password of an account's holder (scrypt, core's hashPassword). No row: no password yet
-- (accounts the CLI made set one through the reset mail).
CREATE TABLE "account_login" (
    "account_id" UUID NOT NULL,
    "password_hash" TEXT NOT NULL,
    "changed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "account_login_pkey" PRIMARY KEY ("account_id"),
    CONSTRAINT "account_login_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "account"("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- A signed-in browser: the SHA-256 of the cookie's value, never the value.
CREATE TABLE "web_session" (
    "id_hash" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "ip" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "web_session_pkey" PRIMARY KEY ("id_hash"),
    CONSTRAINT "web_session_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "account"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX "web_session_account_id_idx" ON "web_session"("account_id");
CREATE INDEX "web_session_expires_at_idx" ON "web_session"("expires_at");

-- Single-use links sent by mail or made by the operator: `invite` (may sign up while
-- REGISTRATION=invite), `signup` (proves the address; completes a sign-up), `reset` (sets a new
-- password). Used once: `used_at` is set by the one UPDATE that consumes it.
CREATE TABLE "web_token" (
    "token_hash" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "email" TEXT,
    "account_id" UUID,
    "invite_hash" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "used_at" TIMESTAMPTZ(3),
    CONSTRAINT "web_token_pkey" PRIMARY KEY ("token_hash"),
    CONSTRAINT "web_token_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "account"("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "web_token_kind_known" CHECK ("kind" IN ('invite', 'signup', 'reset'))
);
CREATE INDEX "web_token_expires_at_idx" ON "web_token"("expires_at");

-- Where an audited action came from: `api` (a credential) or `web` (a back-office session).
ALTER TABLE "audit_log" ADD COLUMN "via" TEXT NOT NULL DEFAULT 'api';
