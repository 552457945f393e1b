/**
 * The S3 clients of the bucket store: minio (with its XML, lodash and async dependencies) and the
 * tus S3 store (with the AWS SDK), about 2.7 MB of the service's bundle. Built as a file of its
 * own, `dist/s3-libraries.js` (scripts/build-app.mjs bundles every `*.chunk.ts` apart and leaves
 * a `require` of it in main.js), and required with the first bucket instance: a service without
 * one neither evaluates nor even holds their code. In the bundle they were source text V8 keeps
 * for the process's life, and parsing them at start cost ≈ 9 MB of RSS in all (bench/memory).
 */
export { Client as MinioClient } from 'minio'
export { S3Store } from '@tus/s3-store'
