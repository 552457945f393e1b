-- The gzip and brotli bodies of each document, made once at publish: a start loads them instead of
-- compressing nine documents at the highest brotli quality (seconds of CPU and ~20 MB of RSS that
-- stayed with the process). NULL for releases published before: compressed on load, then stored.
ALTER TABLE "release_document" ADD COLUMN "body_gzip" BYTEA;
ALTER TABLE "release_document" ADD COLUMN "body_br" BYTEA;
