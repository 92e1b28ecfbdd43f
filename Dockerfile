# One image for the web server and the Celery workers (compose.yaml, docs/deployment.md).
#   docker build -t evalsite .                                # CPU PyTorch (the default)
#   docker build --build-arg TORCH_VARIANT=cu128 -t evalsite:cuda .   # CUDA for GPU workers
FROM python:3.11-slim

ARG TORCH_VARIANT=cpu
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
COPY requirements.txt .
# PyTorch first, from the index of the chosen build; requirements.txt pins the same version.
RUN pip install --index-url "https://download.pytorch.org/whl/${TORCH_VARIANT}" torch==2.13.0 \
    && pip install -r requirements.txt

COPY . .
# Static files into the image, served by WhiteNoise. The key here only runs collectstatic.
RUN DJANGO_SECRET_KEY=collectstatic-only-this-is-not-the-deployment-key-0123456789 \
    EVALSITE_DATA_DIR=/tmp/build DJANGO_STATIC_ROOT=/app/staticfiles \
    python manage.py collectstatic --noinput \
    && python manage.py translations_compile --force \
    && rm -rf /tmp/build \
    && useradd --create-home --uid 1000 evalsite \
    && mkdir -p /data && chown evalsite /data

ENV DJANGO_STATIC_ROOT=/app/staticfiles \
    EVALSITE_DATA_DIR=/data
USER evalsite
EXPOSE 8000
CMD ["gunicorn", "-c", "deploy/gunicorn.conf.py", "evalsite.asgi:application"]
