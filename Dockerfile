# The Website operator image:
#   docker build -t ghcr.io/website-stack/website-operator:0.1.0 .
# Multi-stage: the build stage bundles the operator with esbuild (operator/bundle.ts, through
# scripts/image-tree.sh): one ES module and its chunks holding the operator, the library constructs
# it renders with and the code of its dependencies; the final stage holds Node 22 and that bundle,
# nothing else, and runs as a non-root user.
# NODE_IMAGE is any image with Node 22.19 or later at /usr/local/bin/node (scripts/image.sh builds
# one from Debian packages where no registry is reachable).
ARG NODE_IMAGE=node:22.23.3-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
COPY operator/package.json operator/
# The operator workspace's packages only (its dependencies and esbuild, about 125 packages, not the
# repository's 775 dev packages); no install scripts (esbuild's binary comes in its platform package
# without one).
RUN npm ci --workspace operator --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY imports imports
COPY lib lib
COPY operator/src operator/src
COPY operator/bundle.ts operator/undici.cjs operator/
COPY scripts/image-tree.sh scripts/
RUN PATH=/src/node_modules/.bin:$PATH bash scripts/image-tree.sh /app

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app /app
# 65532: the uid the operator Deployment's securityContext runs as (lib/security.ts NONROOT_UID).
USER 65532:65532
EXPOSE 8080 8081 9443
# --optimize-for-size: V8 favours memory over speed (lib/operator/operator-deployment.ts
# OPERATOR_NODE_FLAGS, measured there); NODE_OPTIONS, which the Deployment sets, does not take it.
ENTRYPOINT ["node", "--optimize-for-size", "/app/operator.mjs"]
