# safelight's Worker in a container: Debian's ffmpeg, the runtime lock installed with
# its hashes, an unprivileged user. compose.yaml runs it beside PostgreSQL (README.md,
# "Running it for months"). Build: docker build -t safelight .
FROM python:3.11-slim-bookworm

# ffmpeg and ffprobe make the video proxies; setpriv (util-linux) is in the base image.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ffmpeg \
    && rm -rf /var/lib/apt/lists/*

RUN useradd --system --user-group --uid 10001 --home-dir /var/lib/safelight \
        --shell /usr/sbin/nologin safelight \
    && install -d -o safelight -g safelight -m 0700 /var/lib/safelight

# The dependencies first, so that a change of safelight's code reuses this layer.
WORKDIR /opt/safelight
# --build-arg SAFELIGHT_FACES=1: the faces lock instead (the runtime's pins, and dlib with
# its models: docs/faces.md); the Worker still finds faces only with SAFELIGHT_FACES=1.
ARG SAFELIGHT_FACES=0
COPY requirements/runtime.lock requirements/faces.lock requirements/
RUN python -m venv .venv \
    && lock=requirements/runtime.lock \
    && if [ "$SAFELIGHT_FACES" = 1 ]; then lock=requirements/faces.lock; fi \
    && .venv/bin/pip install --no-cache-dir --disable-pip-version-check \
        --require-hashes -r "$lock"
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN .venv/bin/pip install --no-cache-dir --disable-pip-version-check \
        --no-deps --no-build-isolation . \
    && rm -rf build src/*.egg-info

ENV PATH=/opt/safelight/.venv/bin:$PATH \
    SAFELIGHT_HOME=/var/lib/safelight \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER safelight
WORKDIR /var/lib/safelight
VOLUME /var/lib/safelight
ENTRYPOINT ["safelight"]
CMD ["worker"]
