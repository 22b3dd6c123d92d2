// What a failed S3 request means to a user: every failure of the object store becomes BACKEND_UNAVAILABLE with what
// to check (credentials, endpoint, bucket, region). Messages name the bucket and endpoint, never a credential.

import { CairnError, ErrorCode } from "../../errors.js";

/** Where the store lives, as messages name it. */
export interface S3Place {
  bucket: string;
  region: string;
  /** The endpoint without credentials, or AWS S3 and its region. */
  where: string;
}

/** Node's codes for a connection that could not be made or broke: the SDK has retried them already. */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ECONNABORTED",
  "ERR_STREAM_PREMATURE_CLOSE",
]);
const CREDENTIAL_ERRORS = new Set([
  "AccessDenied",
  "InvalidAccessKeyId",
  "SignatureDoesNotMatch",
  "ExpiredToken",
  "InvalidToken",
  "TokenRefreshRequired",
  "AllAccessDisabled",
]);

/** The HTTP status of an SDK error, when the server answered. */
export function httpStatus(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;
}

/** A 404 for an object (NoSuchKey on GET, NotFound on HEAD), not for the bucket. */
export function isMissingObject(error: unknown): boolean {
  return httpStatus(error) === 404 && (error as { name?: string }).name !== "NoSuchBucket";
}

/**
 * The CairnError for a failed request (`action` says what the store was doing, e.g. "reading blob …"). Errors that
 * did not come from the object store (no HTTP status, no network code) are returned unchanged.
 */
export function s3Failure(error: unknown, action: string, place: S3Place): unknown {
  if (error instanceof CairnError) return error;
  const { bucket, where } = place;
  const name = (error as { name?: string } | undefined)?.name ?? "Error";
  const code = (error as { code?: string } | undefined)?.code;
  const http = httpStatus(error);
  const attempts = (error as { $metadata?: { attempts?: number } } | undefined)?.$metadata?.attempts ?? 1;
  const tries = `after ${attempts} attempt${attempts === 1 ? "" : "s"}`;
  const data = { bucket };
  if (name === "NoSuchBucket") return noBucket(place);
  if (name === "CredentialsProviderError") {
    return new CairnError(
      ErrorCode.BACKEND_UNAVAILABLE,
      `no credentials for bucket "${bucket}" at ${where}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN for temporary ones) or AWS_PROFILE`,
      { data },
    );
  }
  if (CREDENTIAL_ERRORS.has(name) || http === 401 || http === 403) {
    return new CairnError(
      ErrorCode.BACKEND_UNAVAILABLE,
      `the object store at ${where} refused ${action} in bucket "${bucket}" (${name}, HTTP ${http ?? "?"}): check the credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN or the profile), that they may read and write this bucket, and the region`,
      { data },
    );
  }
  if (http === undefined && (NETWORK_CODES.has(code ?? "") || name === "TimeoutError" || name === "AbortError")) {
    return new CairnError(
      ErrorCode.BACKEND_UNAVAILABLE,
      `the object store at ${where} did not answer while ${action} (${code ?? name}, ${tries}): check that it runs and that the endpoint is right, then retry`,
      { data },
    );
  }
  if (http === undefined && isTlsFailure(code)) {
    return new CairnError(
      ErrorCode.BACKEND_UNAVAILABLE,
      `the TLS connection to the object store at ${where} failed while ${action} (${code}): check that [workspace] endpoint says https:// only for a server that speaks TLS, and that its certificate is trusted (NODE_EXTRA_CA_CERTS names a private CA)`,
      { data },
    );
  }
  if (http === undefined && code?.startsWith("HPE_")) {
    return new CairnError(
      ErrorCode.BACKEND_UNAVAILABLE,
      `the endpoint ${where} did not answer in HTTP while ${action} (${code}): check that [workspace] endpoint's host and port are the S3-compatible server's`,
      { data },
    );
  }
  if (http !== undefined && (http >= 500 || http === 429)) {
    return new CairnError(
      ErrorCode.BACKEND_UNAVAILABLE,
      `the object store at ${where} failed while ${action} in bucket "${bucket}" (${name}, HTTP ${http}, ${tries}): retry later; if it persists, check the server`,
      { data },
    );
  }
  if (http === 301 || name === "PermanentRedirect" || name === "AuthorizationHeaderMalformed") {
    return new CairnError(
      ErrorCode.BACKEND_UNAVAILABLE,
      `bucket "${bucket}" is not in region ${place.region} (${name}, HTTP ${http ?? "?"}): set the bucket's region (AWS_REGION or the region setting)`,
      { data },
    );
  }
  if (http !== undefined) return refused(place, action, `${name}, HTTP ${http}`);
  return error;
}

/** Node's codes for a TLS handshake that failed: plain HTTP answered, or a certificate not trusted or not the host's. */
function isTlsFailure(code: string | undefined): boolean {
  return (
    code !== undefined &&
    (code === "EPROTO" ||
      code.startsWith("ERR_SSL_") ||
      code.startsWith("ERR_TLS_") ||
      /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/.test(code))
  );
}

/** A request the server answered with something no S3 server should (or an error it gives unsupported features). */
export function refused(place: S3Place, action: string, what: string): CairnError {
  return new CairnError(
    ErrorCode.BACKEND_UNAVAILABLE,
    `the object store at ${place.where} refused ${action} in bucket "${place.bucket}" (${what}): check that the endpoint is an S3-compatible server and the bucket's settings; a server without SHA-256 checksums needs checksums turned off`,
    { data: { bucket: place.bucket } },
  );
}

export function noBucket(place: S3Place): CairnError {
  return new CairnError(
    ErrorCode.BACKEND_UNAVAILABLE,
    `bucket "${place.bucket}" does not exist at ${place.where}: create it, or fix the bucket in the blobs setting (s3://bucket/prefix) and the endpoint`,
    { data: { bucket: place.bucket } },
  );
}

/** A request (retries included) or a body that did not come within the backend deadline. */
export function timedOut(place: S3Place, action: string, ms: number): CairnError {
  return new CairnError(
    ErrorCode.BACKEND_UNAVAILABLE,
    `the object store at ${place.where} did not answer while ${action} within ${Number((ms / 1000).toFixed(3))} s ([workspace] backend_timeout_ms, retries included): check that it runs and that the endpoint is right (cairn doctor), then retry`,
    { data: { backend: "s3", bucket: place.bucket, timeoutMs: ms } },
  );
}
