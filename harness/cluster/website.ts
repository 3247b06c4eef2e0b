/** What a Website asks for, as the benchmark's subjects and the kro definitions take it. */
export interface WebsiteSpec {
  readonly title: string;
  /** 1 to 5. */
  readonly replicas: number;
  /** A CSS hex colour, e.g. "#2196F3". */
  readonly color: string;
}

/** The colours generated Websites cycle through (the default first), so that edits change pages. */
const COLORS = ['#2196F3', '#E91E63', '#4CAF50', '#FF9800', '#9C27B0'];

/** The colour of the i-th generated Website (or edit). */
export const websiteColor = (i: number): string => COLORS[i % COLORS.length];
