-- CreateTable
CREATE TABLE "account" (
    "id" UUID NOT NULL,
    "email" TEXT NOT NULL,
    "balance_cents" INTEGER NOT NULL DEFAULT 0,
    "quota_total" INTEGER NOT NULL DEFAULT 5,
    "api_access_enabled" BOOLEAN NOT NULL DEFAULT true,
    "ip_allow_list" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "account_pkey" PRIMARY KEY ("id"),
    -- A balance never goes negative, whatever races the application loses.
    CONSTRAINT "account_balance_not_negative" CHECK ("balance_cents" >= 0),
    CONSTRAINT "account_quota_not_negative" CHECK ("quota_total" >= 0)
);

-- CreateIndex
CREATE UNIQUE INDEX "account_email_key" ON "account"("email");
