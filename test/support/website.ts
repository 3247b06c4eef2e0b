/** What a Website asks for, as the benchmark's subjects and the kro definitions take it. */
export interface WebsiteSpec {
  readonly title: string;
  /** 1 to 5. */
  readonly replicas: number;
  /** A CSS hex colour, e.g. "#2196F3". */
  readonly color: string;
}
