// Types of services.mjs for the TypeScript tests.
export function freePort(): Promise<number>;
export function startPostgres(options?: {
  durable?: boolean;
}): Promise<{ url: string; pid?: number; stop: () => Promise<void> }>;
export function startS3(options?: { bucket?: string }): Promise<{
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  pid: number;
  stop: () => Promise<void>;
}>;
