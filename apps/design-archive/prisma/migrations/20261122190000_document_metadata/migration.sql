-- Per document: the JSON Schema version it was validated against and its item count (both also in manifest.json).
ALTER TABLE "release_document" ADD COLUMN "schema_version" TEXT NOT NULL DEFAULT '1.0.0';
ALTER TABLE "release_document" ADD COLUMN "items" INTEGER NOT NULL DEFAULT 0;
