# syntax=docker/dockerfile:1
# Build: wheels for the service and all its dependencies (jieba only ships an sdist).
FROM python:3.11-slim AS build
WORKDIR /src
RUN pip install --no-cache-dir --upgrade pip
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

# Runtime: only the installed wheels, a non-root user and writable state under /var/lib.
FROM python:3.11-slim AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOST=0.0.0.0 \
    PORT=8080 \
    AUDIT_DATABASE_URL=sqlite:////var/lib/lookup-knowledge/audit.db \
    AUDIT_SPOOL_DIR=/var/lib/lookup-knowledge/audit-spool
RUN groupadd --system --gid 10001 app \
 && useradd --system --uid 10001 --gid app --home-dir /home/app --create-home \
      --shell /usr/sbin/nologin app \
 && mkdir -p /var/lib/lookup-knowledge/audit-spool \
 && chown -R app:app /var/lib/lookup-knowledge
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links=/wheels lookup-knowledge \
 && rm -rf /wheels
USER app
WORKDIR /home/app
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '8080'), timeout=2)"]
CMD ["lookup-knowledge", "serve"]
