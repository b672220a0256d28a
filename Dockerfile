# syntax=docker/dockerfile:1
# One image recipe for all six processes; the SERVICE build argument picks which one runs:
#   docker build --build-arg SERVICE=auth -t chat-auth .
# Every image shares the same layers except the last, so building all six costs about one build.

ARG NODE_IMAGE=node:20-bookworm

# Production dependencies of every workspace, plus tsx (a root devDependency) at the lockfile's
# version in a place of its own: the services are TypeScript run by tsx, there is no build step.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY libs/contracts/package.json libs/contracts/
COPY libs/kit/package.json libs/kit/
COPY libs/testkit/package.json libs/testkit/
COPY services/auth/package.json services/auth/
COPY services/gateway/package.json services/gateway/
COPY services/guilds/package.json services/guilds/
COPY services/media/package.json services/media/
COPY services/music/package.json services/music/
COPY services/social/package.json services/social/
RUN npm ci --omit=dev --no-audit --no-fund \
 && TSX_VERSION="$(node -p "require('./package-lock.json').packages['node_modules/tsx'].version")" \
 && npm install --prefix /opt/tsx --no-save --no-audit --no-fund "tsx@${TSX_VERSION}" \
 && ln -s /opt/tsx/node_modules/tsx node_modules/tsx

# The runtime: a slim image with the dependencies and the sources, run as the unprivileged node user.
FROM ${NODE_IMAGE}-slim AS runtime
ARG SERVICE=gateway
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    SERVICE=${SERVICE}
WORKDIR /app
COPY --from=deps /opt/tsx /opt/tsx
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY libs ./libs
COPY services ./services
# Some services write files beside their sources on first start (auth's development key).
RUN mkdir -p .data && chown node:node .data
USER node
# exec: node replaces the shell as PID 1, so SIGTERM reaches it and the graceful shutdown runs.
CMD exec node --import tsx "services/${SERVICE}/src/main.ts"
