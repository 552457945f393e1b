-- CreateTable
CREATE TABLE "release" (
    "id" SERIAL NOT NULL,
    "version" TEXT NOT NULL,
    "published_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "active" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "release_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "release_document" (
    "release_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "body" BYTEA NOT NULL,
    "sha256" CHAR(64) NOT NULL,
    "bytes" INTEGER NOT NULL,

    CONSTRAINT "release_document_pkey" PRIMARY KEY ("release_id","name")
);

-- CreateIndex
CREATE UNIQUE INDEX "release_version_key" ON "release"("version");

-- At most one active release (not expressible in schema.prisma).
CREATE UNIQUE INDEX "release_single_active" ON "release"("active") WHERE "active";

-- AddForeignKey
ALTER TABLE "release_document" ADD CONSTRAINT "release_document_release_id_fkey" FOREIGN KEY ("release_id") REFERENCES "release"("id") ON DELETE CASCADE ON UPDATE CASCADE;
