# Application image: one image, four entrypoints (gateway, api, control worker, host runner).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npx tsc -p tsconfig.build.json && npx tsx ops/build/console.ts && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Standard or custom console build (docs/console.md).
COPY --from=build /app/dist/console/site-ui-manifest.json ./site-ui-manifest.json
COPY --from=build /app/config ./config
COPY package.json ./
USER node
CMD ["node", "--enable-source-maps", "dist/gateway/main.js"]
