// Which backend a `[workspace]` setting names, without loading any backend: read by the app at start-up.

export function isPostgres(catalog: string | undefined): catalog is string {
  return catalog !== undefined && /^postgres(ql)?:\/\//.test(catalog);
}

export function isS3(blobs: string | undefined): blobs is string {
  return blobs?.startsWith("s3://") === true;
}
