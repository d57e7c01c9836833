# syntax=docker/dockerfile:1
# Build: wheels of the locked dependencies first (a layer that changes only with
# requirements.lock), then the service's own wheel (the layer a code change rebuilds).
FROM python:3.11-slim AS build
WORKDIR /src
RUN pip install --no-cache-dir --upgrade pip
COPY requirements.lock ./
RUN pip wheel --no-cache-dir --wheel-dir /wheels/deps -r requirements.lock
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels/app .

# Runtime: the same two layers installed, a non-root user, writable state under DATA_DIR.
FROM python:3.11-slim AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/var/lib/lookup-knowledge \
    LOG_FORMAT=json
RUN groupadd --system --gid 10001 app \
 && useradd --system --uid 10001 --gid app --home-dir /home/app --create-home \
      --shell /usr/sbin/nologin app \
 && mkdir -p /var/lib/lookup-knowledge/audit-spool \
 && chown -R app:app /var/lib/lookup-knowledge
COPY requirements.lock /tmp/requirements.lock
COPY --from=build /wheels/deps /wheels/deps
RUN pip install --no-cache-dir --no-index --find-links=/wheels/deps -r /tmp/requirements.lock \
 && rm -rf /wheels/deps /tmp/requirements.lock
COPY --from=build /wheels/app /wheels/app
RUN pip install --no-cache-dir --no-index --no-deps /wheels/app/*.whl && rm -rf /wheels
USER app
WORKDIR /home/app
# The bundled KB's index, built once here: every container start reads it back instead of
# building it (docs/retrieval.md#stored-index); a PYRAG_DOCS_DIR of other pages is built at start.
RUN lookup-knowledge pyrag index
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '8080'), timeout=2)"]
CMD ["lookup-knowledge", "serve"]
