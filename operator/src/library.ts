// The one place the operator reaches into the website-stack library, and only through its public
// entry point (lib/index.ts): the operator renders each Website's children with the same
// WebsiteWorkload construct `npm run synth` uses, and converts with the same functions, so the two
// can never disagree. It imports the library's source rather than a published build, so
// `npm run operator` and the tests run the working tree; the image compiles both in one pass.
export * from '../../lib/internal.ts';
