# syntax=docker/dockerfile:1
# One image recipe for all six processes; the SERVICE build argument picks which one runs:
#   docker build --build-arg SERVICE=auth -t chat-auth .
# Every image shares the same layers except the last, so building all six costs about one build.

# Node 24 LTS, the same version that scripts/node-env.sh brings to machines with an older Node.
ARG NODE_IMAGE=node:24.21.0-bookworm

# Every workspace's manifest first, so that the install layers are cached until a manifest changes.
FROM ${NODE_IMAGE} AS manifests
WORKDIR /app
COPY package.json package-lock.json ./
COPY libs/client/package.json libs/client/
COPY libs/contracts/package.json libs/contracts/
COPY libs/kit/package.json libs/kit/
COPY libs/messaging/package.json libs/messaging/
COPY libs/testkit/package.json libs/testkit/
COPY services/auth/package.json services/auth/
COPY services/gateway/package.json services/gateway/
COPY services/guilds/package.json services/guilds/
COPY services/media/package.json services/media/
COPY services/music/package.json services/music/
COPY services/social/package.json services/social/

# The bundles: each process's TypeScript and the workspace libraries as one JavaScript file
# (npm run build), so that production runs plain Node without a TypeScript loader.
FROM manifests AS build
RUN npm ci --no-audit --no-fund
COPY libs ./libs
COPY services ./services
COPY scripts/build.ts scripts/
RUN node --import tsx scripts/build.ts

# Production dependencies only, with each workspace's own node_modules (the bundles import from them).
FROM manifests AS deps
RUN npm ci --omit=dev --no-audit --no-fund

# The runtime: a slim image with the dependencies, the bundles and the migrations, run as the
# unprivileged node user.
FROM ${NODE_IMAGE}-slim AS runtime
ARG SERVICE=gateway
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    SERVICE=${SERVICE}
WORKDIR /app
COPY --from=deps /app ./
COPY libs ./libs
COPY services ./services
COPY --from=build /app/dist ./dist
# Some services write files beside their sources on first start (auth's development key).
RUN mkdir -p .data && chown node:node .data
USER node
# exec: node replaces the shell as PID 1, so SIGTERM reaches it and the graceful shutdown runs.
# node-flags: the process's own Node flags, written by the build beside its bundle.
CMD exec node $(cat "dist/${SERVICE}/node-flags") "dist/${SERVICE}/main.mjs"
