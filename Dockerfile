# The service on gunicorn (gunicorn.conf.py), as the README's "Production" section runs it.
#   docker build -t subscriptions .
#   docker run --rm subscriptions flask --app wsgi db upgrade      (with the variables below)
#   docker run -p 8000:8000 -e DATABASE_URL=postgresql+psycopg://app@db/subscriptions \
#     -e PROVIDER_API_KEY=sk_live_... -e PROVIDER_WEBHOOK_SECRET=whsec_... -e PROVIDER_PLANS='{"price_...": "pro"}' \
#     -e SECRET_KEY=... -e RATELIMIT_STORAGE_URI=redis://redis:6379 subscriptions
# Secrets come from the environment at run time, never from the image.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    BIND=0.0.0.0:8000 \
    LOG_FORMAT=json \
    PROXY_FIX_X_FOR=1 \
    PROMETHEUS_MULTIPROC_DIR=/tmp/metrics

WORKDIR /srv/subscriptions
COPY setup.cfg pyproject.toml README.md ./
COPY app ./app
RUN pip install .
COPY migrations ./migrations
COPY wsgi.py gunicorn.conf.py ./

# Runs as an unprivileged user that owns nothing in the image but Flask's instance folder, which
# the app creates on start: the code is read-only to it.
RUN useradd --system --no-create-home --shell /usr/sbin/nologin subscriptions \
    && mkdir instance && chown subscriptions instance
USER subscriptions

EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=2)"]
CMD ["gunicorn", "-c", "gunicorn.conf.py", "wsgi:app"]
