-- A share may be encrypted end to end in the sender's browser (issue 47): the server keeps only
-- what a receiver needs to decrypt it with the key it never sees (the scheme, the record size, how
-- the key is made — from the link or from a passphrase with its KDF salt and iterations — and the
-- files' names and types as one encrypted blob). NULL: not encrypted, the share behaves as before.
ALTER TABLE "share" ADD COLUMN "encryption" JSONB;
