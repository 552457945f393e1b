-- Ended shares (issue 20 item 4): a share removed because its downloads were used up or it
-- expired leaves this row behind for a while, so that its code or link answers "used up" or
-- "expired on …" (not a wrong guess, which would spend the guessing budget) instead of "no share".
-- Only the code, the link token's hash and dates are kept; nothing about the files.
CREATE TABLE "ended_share" (
    "share_id" TEXT NOT NULL,
    "code" TEXT NOT NULL,
    "link_token_hash" TEXT,
    "reason" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "ended_at" TIMESTAMPTZ(3) NOT NULL,
    "forget_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "ended_share_pkey" PRIMARY KEY ("share_id")
);
CREATE INDEX "ended_share_code_idx" ON "ended_share"("code");
CREATE INDEX "ended_share_link_token_hash_idx" ON "ended_share"("link_token_hash");
CREATE INDEX "ended_share_forget_at_idx" ON "ended_share"("forget_at");
