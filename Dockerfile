# regbridge: one image for every role (serve, broker, fanout, watch, demo).
# TypeScript runs through tsx (a runtime dependency), so there is no build stage.
FROM node:20-slim

ENV NODE_ENV=production
WORKDIR /app

# Dependencies first: this layer is rebuilt only when the lock file changes.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY bin ./bin
COPY src ./src
COPY bridge ./bridge
COPY broker ./broker
COPY controller ./controller
COPY cli ./cli

# Never root at run time.
USER node

# 8080: the device REST API (serve); 1883: MQTT (broker, or serve's embedded broker).
EXPOSE 8080 1883

CMD ["node", "bin/regbridge.js", "serve"]
