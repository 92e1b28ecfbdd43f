# Two images from the hash-locked requirements (requirements/README.md; compose.yaml):
#   docker build --target web -t evalsite:web .               # web server, default worker, beat
#   docker build --target inference -t evalsite:inference .   # the `inference` queue's worker
#   docker build --target inference --build-arg TORCH_VARIANT=cu128 -t evalsite:inference-cuda .
# `web` holds no ML stack (no torch, transformers, sentence-transformers); `inference` adds it,
# with PyTorch's CPU build unless TORCH_VARIANT names a CUDA build.
FROM python:3.11-slim AS base

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
RUN useradd --create-home --uid 1000 evalsite && mkdir -p /data && chown evalsite /data

# Every package pinned with its hashes, none resolved here (--no-deps): the lock is complete.
FROM base AS web-packages
COPY requirements/web.lock requirements/
RUN pip install --no-deps --require-hashes -r requirements/web.lock

FROM web-packages AS inference-packages
ARG TORCH_VARIANT=cpu
COPY requirements/inference.lock requirements/
# The lock pins torch's CPU build; a CUDA build of the same version replaces it (its nvidia
# wheels come from PyTorch's index, outside the lock).
RUN pip install --no-deps --require-hashes \
        --extra-index-url https://download.pytorch.org/whl/cpu -r requirements/inference.lock \
    && if [ "$TORCH_VARIANT" != cpu ]; then \
        pip install --index-url "https://download.pytorch.org/whl/${TORCH_VARIANT}" \
            "torch==2.13.0+${TORCH_VARIANT}"; \
    fi

FROM web-packages AS app
COPY . .
# Static files into the image, served by WhiteNoise. The key here only runs collectstatic.
RUN DJANGO_SECRET_KEY=collectstatic-only-this-is-not-the-deployment-key-0123456789 \
    EVALSITE_DATA_DIR=/tmp/build DJANGO_STATIC_ROOT=/app/staticfiles \
    python manage.py collectstatic --noinput \
    && python manage.py translations_compile --force \
    && rm -rf /tmp/build

FROM inference-packages AS inference
COPY --from=app /app /app
ENV DJANGO_STATIC_ROOT=/app/staticfiles \
    EVALSITE_DATA_DIR=/data
USER evalsite
CMD ["celery", "-A", "evalsite", "worker", "-Q", "inference", "--concurrency", "1", "--loglevel", "INFO"]

# The last stage: what a plain `docker build .` gives.
FROM app AS web
ENV DJANGO_STATIC_ROOT=/app/staticfiles \
    EVALSITE_DATA_DIR=/data
USER evalsite
EXPOSE 8000
CMD ["gunicorn", "-c", "deploy/gunicorn.conf.py", "evalsite.asgi:application"]
