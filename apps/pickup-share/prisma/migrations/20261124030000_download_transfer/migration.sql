-- Resumable downloads (issue 23 item 2): one counted download that may come in several requests.
-- room = budget - written - reserved; a reservation is the conditional "room >= bytes", which
-- Postgres re-checks under the row lock, so parallel ranges never take a transfer past its budget.
CREATE TABLE "download_transfer" (
    "id" TEXT NOT NULL,
    "share_id" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "receiver" TEXT NOT NULL,
    "paid" BOOLEAN NOT NULL DEFAULT false,
    "budget" BIGINT NOT NULL,
    "room" BIGINT NOT NULL,
    "reserved" BIGINT NOT NULL DEFAULT 0,
    "written" BIGINT NOT NULL DEFAULT 0,
    "reached_end" BOOLEAN NOT NULL DEFAULT false,
    "complete" BOOLEAN NOT NULL DEFAULT false,
    "opened_at" TIMESTAMPTZ(3) NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "download_transfer_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "download_transfer_share_id_fkey" FOREIGN KEY ("share_id") REFERENCES "share"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX "download_transfer_share_id_path_receiver_idx" ON "download_transfer"("share_id", "path", "receiver");
-- At most one transfer being opened per receiver and file: parallel first requests (a download
-- manager's ranges) find it taken, wait until it is paid and join it instead of paying again.
CREATE UNIQUE INDEX "download_transfer_opening_key" ON "download_transfer"("share_id", "path", "receiver") WHERE NOT "paid";
