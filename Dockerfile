# One image with both commands: `promop` (the operator) and `promop-config-reloader` (the sidecar).
#   docker build -t ghcr.io/promop/promop:0.1.0 .
# The config reloader alone (what every Prometheus, Alertmanager and ThanosRuler pod pulls; no
# operator, no kubernetes package), for the operator's --config-reloader-image:
#   docker build --target reloader -t ghcr.io/promop/promop-config-reloader:0.1.0 .
# python:*-slim ships no byte code for its standard library, and a read-only container cannot
# write it: each stage compiles it, else every start compiles what it imports (3x the CPU).
FROM python:3.11-slim AS reloader-build
WORKDIR /src
COPY packaging/reloader/pyproject.toml ./
COPY reloader ./reloader
COPY gotime ./gotime
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim AS reloader
LABEL org.opencontainers.image.source="https://github.com/promop/promop" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=reloader-build /install /usr/local
RUN python3 -m compileall -q /usr/local/lib/python3.11 \
    && ln -s /usr/local/bin/promop-config-reloader /bin/prometheus-config-reloader \
    && promop-config-reloader --help >/dev/null
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 65534:65534
EXPOSE 8080
ENTRYPOINT ["promop-config-reloader"]

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml setup.py MANIFEST.in README.md ./
COPY promop ./promop
COPY reloader ./reloader
COPY gotime ./gotime
COPY crds ./crds
COPY examples ./examples
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
LABEL org.opencontainers.image.source="https://github.com/promop/promop" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /install /usr/local
# Upstream's StatefulSets run the reloader as /bin/prometheus-config-reloader; keep that path working.
RUN python3 -m compileall -q /usr/local/lib/python3.11 \
    && ln -s /usr/local/bin/promop-config-reloader /bin/prometheus-config-reloader \
    && promop --version && promop-config-reloader --help >/dev/null
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
# nobody: the Deployment and StatefulSets also set runAsNonRoot and a read-only root filesystem.
USER 65534:65534
EXPOSE 8080
ENTRYPOINT []
CMD ["promop", "run"]
