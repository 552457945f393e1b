-- Resumable (tus) uploads (issue 16 item 1): an upload created through tus may be resumed until
-- this moment; after it, an unfinished one is removed from its store and its reservation given back.
ALTER TABLE "issued_upload" ADD COLUMN "resumable_until" TIMESTAMPTZ(3);
CREATE INDEX "issued_upload_resumable_until_idx" ON "issued_upload"("resumable_until");
