-- A share may be protected by a password (issue 47): only its scrypt hash is kept, in core's
-- `scrypt$N$r$p$salt$hash` form. NULL: no password, the share behaves exactly as before.
ALTER TABLE "share" ADD COLUMN "password_hash" TEXT;
