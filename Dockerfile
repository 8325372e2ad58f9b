# One image for `lockwright worker`, `lockwright watcher` and the CLI (`crds install`,
# `xpkg ...`): docker run IMAGE worker | watcher | crds install | --help.
# tests/integration/test_image_venv.py runs this file's `pip install` steps without Docker.
ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm

# Build stage: a virtual environment at the path it keeps in the final stage (a venv's
# scripts name their interpreter by absolute path, so it cannot move).
# pip trusts the system's CA bundle. Behind a TLS-inspecting proxy, give it yours for the
# build only: `docker build --secret id=ca-bundle,src=/path/to/ca-certificates.crt .`
# (BuildKit) mounts it over the system bundle during the two pip steps; it is in no layer,
# and the final stage does not even have this stage's files.
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt
RUN python -m venv /opt/lockwright
ENV PATH=/opt/lockwright/bin:$PATH
WORKDIR /src
# Dependencies before the source: this layer is rebuilt only when the requirements change.
COPY requirements/image.txt requirements/image.txt
RUN --mount=type=secret,id=ca-bundle,required=false,target=/etc/ssl/certs/ca-certificates.crt \
    pip install -r requirements/image.txt
# The project alone; its dependencies are the layer above (the same list, checked by a test).
COPY . .
RUN --mount=type=secret,id=ca-bundle,required=false,target=/etc/ssl/certs/ca-certificates.crt \
    pip install --no-deps .

# Final stage: the interpreter and the venv, no source tree, no pip cache, no compilers.
FROM ${PYTHON_IMAGE}
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/lockwright \
        --shell /usr/sbin/nologin lockwright
COPY --from=build /opt/lockwright /opt/lockwright
# PYTHONDONTWRITEBYTECODE: the venv is root-owned and read-only to the user (bytecode was
# compiled at install); the package cache goes to ~/.cache/lockwright/xpkg, the user's home.
ENV PATH=/opt/lockwright/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \
    HOME=/home/lockwright
WORKDIR /home/lockwright
# Numeric, so Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
USER 10001:10001
ENTRYPOINT ["lockwright"]
CMD ["--help"]
