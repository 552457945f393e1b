-- The pickup link's token (128 random bits, in the link's fragment): only its SHA-256 is kept.
-- A share made before links had tokens has none, and its code keeps working.
ALTER TABLE "share" ADD COLUMN "link_token_hash" TEXT;
CREATE UNIQUE INDEX "share_link_token_hash_key" ON "share"("link_token_hash");
